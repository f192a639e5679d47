"""Numbered schema migrations, shipped inside the package as mindtui._migrations."""
