"""The docs' pages as tests read them: the fenced blocks of the getting-started walkthrough, which one test runs
step by step and another checks are all run."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def walkthrough_blocks() -> list[tuple[str, str]]:
    """The fenced blocks of the walkthrough section, as (language, text), in order."""
    page = (ROOT / "docs" / "getting-started.md").read_text()
    start = page.index("## Your first project, step by step")
    end = page.find("\n## ", start + 1)
    section = page[start:end if end != -1 else len(page)]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)
