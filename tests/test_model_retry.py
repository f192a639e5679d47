"""A long-lived process heals: a failed model load is tried again after models.retry_after_s, or at
once on Service.retry_models()."""

from __future__ import annotations

import pytest

from mindtui.audience import Audience
from mindtui.config import load_settings
from mindtui.errors import ModelUnavailableError
from mindtui.models.holder import READY, UNAVAILABLE, ModelHolder
from mindtui.service import Service
from mindtui.store import open_database

from fakes import DeterministicFakeEmbedder


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class BrokenThenFixedModel:
    """Fails to load until `fixed` is set (the owner rebuilt the model file); counts the attempts."""

    def __init__(self) -> None:
        self.fixed, self.attempts = False, 0
        self.embedder = DeterministicFakeEmbedder()

    def __call__(self, settings, say):
        self.attempts += 1
        if not self.fixed:
            raise ModelUnavailableError("the embedding model file is corrupt; run `mindtui models build`")
        return self.embedder


def embedding_state(holder, settings) -> str:
    return next(s.status for s in holder.states(settings) if s.role == "embedding")


def test_a_failed_load_is_remembered_then_tried_again_after_the_cool_down():
    settings = load_settings()
    assert settings.models.retry_after_s == 60  # the documented default
    model, clock = BrokenThenFixedModel(), Clock()
    holder = ModelHolder(embedder_factory=model, clock=clock)
    with pytest.raises(ModelUnavailableError, match="corrupt"):
        holder.embedder(settings)
    model.fixed = True
    clock.now += 59
    with pytest.raises(ModelUnavailableError, match="corrupt"):  # remembered: no new attempt per keystroke
        holder.embedder(settings)
    assert model.attempts == 1 and embedding_state(holder, settings) == UNAVAILABLE
    clock.now += 1
    assert holder.embedder(settings) is model.embedder
    assert model.attempts == 2 and embedding_state(holder, settings) == READY


def test_the_cool_down_is_a_setting():
    settings = load_settings().with_values({"models": {"retry_after_s": 5}})
    model, clock = BrokenThenFixedModel(), Clock()
    holder = ModelHolder(embedder_factory=model, clock=clock)
    with pytest.raises(ModelUnavailableError):
        holder.embedder(settings)
    model.fixed = True
    clock.now += 5
    assert holder.embedder(settings) is model.embedder


def test_retry_models_tries_again_at_once(db_path):
    open_database(db_path).close()
    settings = load_settings().with_overrides(db=str(db_path))
    model = BrokenThenFixedModel()
    holder = ModelHolder(embedder_factory=model, clock=Clock())  # the clock never moves
    with Service(settings, audience=Audience.OWNER, models=holder) as service:
        with pytest.raises(ModelUnavailableError):
            holder.embedder(settings)
        model.fixed = True
        with pytest.raises(ModelUnavailableError):
            holder.embedder(settings)
        service.retry_models()
        assert holder.embedder(settings) is model.embedder
    assert model.attempts == 2
