"""Interpreters: sync, asyncio and dry-run, over one pure run state machine (coming)."""

__all__: list[str] = []
