"""A large, deterministic vault for scale benchmarks, recombined from a real one.

    .venv/bin/python bench/make_vault.py 100000 --seed 1 --out /tmp/vault-100k
    .venv/bin/python bench/make_vault.py 10000 --seed 1 --out /tmp/vault-10k --source ../shared/eval/obsidian-hub-en/vault

Each generated note takes a template note of the source vault (drawn at random): its folder, its
tags, its length in characters and its number of wikilinks. Its text is paragraphs of the whole
source drawn at random (their own links read as their labels) until the template's length; its
links go to other generated notes, drawn in proportion to how often each one's template is linked
in the source (so hubs stay hubs and the in-degree keeps its long tail). Titles combine words of
two source titles. The same N and seed give the same files, byte for byte.

The source vault carries no licence: the generated vault is written outside the project (never
commit it) and is for measuring only. The script prints the note-length, out-link and in-link
distributions of the source and of the result side by side, so a reader can check they match.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = REPO.parent / "shared" / "eval" / "obsidian-hub-en" / "vault"
WIKILINK = re.compile(r"!?\[\[([^\]\|#\n]+)(?:#[^\]\|\n]*)?(?:\|([^\]\n]*))?\]\]")
FRONTMATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?\n", re.S)
TAG_LINE = re.compile(r"^\s*-\s*([#\w/\-]+)\s*$")
UNSAFE = re.compile(r"[\\/:*?\"<>|#^\[\]]")


class SourceNote:
    __slots__ = ("folder", "title", "tags", "length", "out_links", "in_links")

    def __init__(self, folder: str, title: str, tags: list[str], length: int, out_links: int) -> None:
        self.folder, self.title, self.tags, self.length, self.out_links = folder, title, tags, length, out_links
        self.in_links = 0


def _tags(frontmatter: str) -> list[str]:
    """The items of a `tags:` list (block style) or of `tags: [a, b]`; enough for a benchmark."""
    tags, inside = [], False
    for line in frontmatter.splitlines():
        if line.startswith("tags:"):
            rest = line[5:].strip()
            if rest.startswith("["):
                return [t.strip(" '\"") for t in rest.strip("[]").split(",") if t.strip(" '\"")]
            inside = not rest
            if rest:
                return [rest.strip(" '\"")]
            continue
        if inside:
            match = TAG_LINE.match(line)
            if not match:
                break
            tags.append(match.group(1))
    return tags


def read_source(root: Path) -> tuple[list[SourceNote], list[str]]:
    notes: list[SourceNote] = []
    paragraphs: list[str] = []
    by_name: dict[str, SourceNote] = {}
    links: list[tuple[SourceNote, str]] = []
    for path in sorted(root.rglob("*.md")):
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        match = FRONTMATTER.match(text)
        frontmatter, body = (match.group(1), text[match.end():]) if match else ("", text)
        targets = [m.group(1).strip() for m in WIKILINK.finditer(body)]
        note = SourceNote(str(path.parent.relative_to(root)), path.stem, _tags(frontmatter), len(body), len(targets))
        notes.append(note)
        by_name.setdefault(path.stem.lower(), note)
        links.extend((note, t) for t in targets)
        for block in re.split(r"\n\s*\n", body):
            block = WIKILINK.sub(lambda m: (m.group(2) or m.group(1)).strip(), block).strip()
            if block and not block.startswith("%%"):
                paragraphs.append(block)
    for _source, target in links:
        linked = by_name.get(target.rsplit("/", 1)[-1].lower())
        if linked is not None:
            linked.in_links += 1
    return notes, paragraphs


def _title(rng: np.random.Generator, notes: list[SourceNote], taken: set[str], number: int) -> str:
    first = notes[rng.integers(len(notes))].title.split()
    second = notes[rng.integers(len(notes))].title.split()
    words = first[: max(1, len(first) - 1)] + second[-1:]
    title = UNSAFE.sub(" ", " ".join(words)).strip(" .") or "Note"
    if title.lower() in taken:
        title = f"{title} {number}"
    taken.add(title.lower())
    return title


def generate(source: list[SourceNote], paragraphs: list[str], n: int, seed: int):
    """[(relative path, text)], plus per generated note its out-link count and each target's in-links."""
    rng = np.random.default_rng(seed)
    templates = [source[i] for i in rng.integers(len(source), size=n)]
    taken: set[str] = set()
    titles = [_title(rng, source, taken, i) for i in range(n)]
    weight = np.array([t.in_links + 1.0 for t in templates])
    weight /= weight.sum()
    files, in_links = [], np.zeros(n, dtype=np.int64)
    for i, template in enumerate(templates):
        parts, length = [], len(titles[i]) + 4  # the heading counts, as it does in the source
        while length < template.length:
            paragraph = paragraphs[rng.integers(len(paragraphs))]
            parts.append(paragraph[: template.length - length] if length + len(paragraph) > template.length
                         and parts else paragraph)
            length += len(parts[-1]) + 2
        if not parts:
            parts = [""]
        targets = rng.choice(n, size=template.out_links, p=weight) if template.out_links else []
        for target in targets:
            in_links[target] += 1
            where = rng.integers(len(parts))
            label = f"[[{titles[target]}]]" if rng.random() < 0.8 else f"[[{titles[target]}|{titles[target].split()[0]}]]"
            parts[where] = f"{parts[where]} {label}".strip()
        frontmatter = ""
        if template.tags:
            frontmatter = "---\ntags:\n" + "".join(f"  - {t}\n" for t in template.tags) + "---\n"
        folder = "" if template.folder == "." else template.folder + "/"
        files.append((f"{folder}{titles[i]}.md", frontmatter + f"# {titles[i]}\n\n" + "\n\n".join(parts) + "\n"))
    return files, [t.out_links for t in templates], in_links


def quantiles(values) -> list[float]:
    array = np.asarray(list(values), dtype=float)
    return [float(np.quantile(array, q)) for q in (0.1, 0.5, 0.9, 0.99)] + [float(array.mean())]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int, help="how many notes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="the vault to recombine")
    parser.add_argument("--out", type=Path, required=True, help="an empty or absent folder (never inside the repo)")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    if REPO in out.parents or out == REPO:
        parser.error("--out must lie outside the project: the source vault carries no licence")
    if out.exists() and any(out.iterdir()):
        parser.error(f"{out} is not empty")
    if not args.source.is_dir():
        parser.error(f"no source vault at {args.source}")
    source, paragraphs = read_source(args.source)
    files, out_links, in_links = generate(source, paragraphs, args.n, args.seed)
    for rel, text in files:
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    lengths = [len(text) for _rel, text in files]
    print(f"{len(files)} notes in {out} (seed {args.seed}, from {len(source)} notes and {len(paragraphs)} paragraphs)")
    print(f"{'distribution':<22}{'p10':>9}{'p50':>9}{'p90':>9}{'p99':>10}{'mean':>10}")
    rows = [("note chars, source", [n.length for n in source]), ("note chars, made", lengths),
            ("out-links, source", [n.out_links for n in source]), ("out-links, made", out_links),
            ("in-links, source", [n.in_links for n in source]), ("in-links, made", in_links)]
    for name, values in rows:
        print(f"{name:<22}" + "".join(f"{v:>9.1f}" if i < 3 else f"{v:>10.1f}"
                                      for i, v in enumerate(quantiles(values))))
    folders = Counter(rel.rsplit("/", 1)[0] if "/" in rel else "." for rel, _ in files)
    print(f"folders: {len(folders)} (source: {len({n.folder for n in source})})")
    print(f"rerun: .venv/bin/python bench/make_vault.py {args.n} --seed {args.seed} --out {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
