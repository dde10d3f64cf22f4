"""Prompt files: load by name or path, render ``{{field}}`` placeholders, hash for the instrument.

Built-in prompts are Markdown files inside the package (reader prompts in
``memrun/llm/prompts/``, judge prompts in ``memrun/judges/prompts/``); a config may name
one (``locomo``) or give a path to the user's own file. A prompt's identity in the
instrument is the sha256 of its bytes, so editing a prompt changes the instrument.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path

from memrun.errors import ConfigError

_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")


@dataclass(frozen=True)
class Prompt:
    """A prompt template: its name, text and the sha256 of its bytes (hex)."""

    name: str
    text: str
    sha256: str

    @property
    def fields(self) -> set[str]:
        """The placeholder names the template uses."""
        return set(_PLACEHOLDER.findall(self.text))

    @cached_property
    def _parts(self) -> list[str]:
        # literal text at even indices, placeholder names at odd ones: split once, not per render
        return _PLACEHOLDER.split(self.text)

    def render(self, values: Mapping[str, str]) -> str:
        """The text with each ``{{name}}`` replaced by ``values[name]``. Raises KeyError for a missing one."""
        parts = list(self._parts)
        parts[1::2] = [values[name] for name in parts[1::2]]
        return "".join(parts)


def load_prompt(package: str, name_or_path: str, where: str, required: Iterable[str] = ()) -> Prompt:
    """Load the built-in prompt ``<package>/prompts/<name>.md``, or a file path.

    where: the config key, for errors. required: placeholders the prompt must use.
    Raises ConfigError naming the key, the prompt and the fix.
    """
    if "/" in name_or_path or name_or_path.endswith((".md", ".txt")):
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            raise ConfigError(f"{where}={name_or_path}: no such prompt file")
        blob = path.read_bytes()
        name = path.stem
    else:
        node = resources.files(package).joinpath(f"prompts/{name_or_path}.md")
        if not node.is_file():
            known = sorted(p.name[:-3] for p in resources.files(package).joinpath("prompts").iterdir() if p.name.endswith(".md"))
            raise ConfigError(f"{where}={name_or_path}: no such built-in prompt; choose one of {', '.join(known)} or give a file path")
        blob = node.read_bytes()
        name = name_or_path
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}={name_or_path}: not UTF-8 text ({exc})") from exc
    prompt = Prompt(name=name, text=text, sha256=hashlib.sha256(blob).hexdigest())
    missing = set(required) - prompt.fields
    if missing:
        raise ConfigError(f"{where}={name_or_path}: the prompt lacks {', '.join('{{' + m + '}}' for m in sorted(missing))}")
    return prompt


def combined_sha256(prompts: Iterable[Prompt]) -> str:
    """One sha256 over several prompts (name and hash each, sorted by name)."""
    digest = hashlib.sha256()
    for p in sorted(prompts, key=lambda p: p.name):
        digest.update(f"{p.name}\0{p.sha256}\n".encode())
    return digest.hexdigest()
