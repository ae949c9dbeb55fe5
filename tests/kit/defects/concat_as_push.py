"""Seeded defect (a write method): `concat` is applied as `push`."""

from _wrap import serve_with, with_method

serve_with(before=with_method("concat", "push"))
