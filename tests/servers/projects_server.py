"""A loopback MCP server shaped like basic-memory (PyPI, Python >= 3.12, 600 MB installed):
notes live in *projects* the client must create first, many tools, and the traps a guess
by name falls into. stdio only.

Tools: ``create_memory_project(project_name, project_path)`` (the project's notes are files
under ``project_path``; the answer carries a server-issued ``external_id``),
``delete_project(project_name, delete_notes=False)``, ``write_note(title, content,
directory, project=None)``, ``search_notes(query=None, project=None, page_size=10,
output_format="text"|"json")`` (JSON: ``{"result": {"results": [{title, content, score}]}}``,
words shared with the query), ``search(query)`` (an adapter for another client: it answers
with an error), ``find(path, name)`` (no query), ``delete_note(identifier, project=None)``,
``list_memory_projects()``. A tool naming an unknown project fails with "Project not found".
The registry of projects (notes included) is ``$HOME/.projects-test/config.json``, read and
written at start and after every change, so that every process of the server shares it.

``MCP_TEST_IDS_ONLY=1``: the tools take ``project_id`` instead of ``project`` (only the id
``create_memory_project`` issued works): a server whose namespaces are named by ids it issues.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Literal

from mcp.server.mcpserver import MCPServer

server = MCPServer("Projects Test", version="4.1.3")  # a framework's version, as FastMCP servers report
WORD = re.compile(r"[a-z0-9]+")
REGISTRY = Path(os.environ.get("HOME", ".")) / ".projects-test" / "config.json"
PROJECTS: dict[str, dict] = {}  # name -> {id, path, notes: {title: content}}
IDS_ONLY = os.environ.get("MCP_TEST_IDS_ONLY") == "1"
Format = Literal["text", "json"]  # an enum in the schema, as basic-memory's output_format


def _save() -> None:
    REGISTRY.parent.mkdir(parents=True, exist_ok=True)
    REGISTRY.write_text(json.dumps(PROJECTS))


if REGISTRY.is_file():  # a later process (memrun's clean-up session) sees the projects of earlier ones
    PROJECTS.update(json.loads(REGISTRY.read_text()))


def _project(name: str | None = None, project_id: str | None = None) -> dict:
    for pname, p in PROJECTS.items():
        if (name is not None and pname == name) or (project_id is not None and p["id"] == project_id):
            return p
    raise ValueError(f"Project not found: {name or project_id!r}")


@server.tool()
async def create_memory_project(project_name: str, project_path: str, set_default: bool = False) -> dict:
    """Create a new project. The project directory will be created if it doesn't exist."""
    if project_name in PROJECTS:
        raise ValueError(f"project {project_name!r} exists")
    Path(project_path).mkdir(parents=True, exist_ok=True)
    PROJECTS[project_name] = {"id": str(uuid.uuid4()), "path": project_path, "notes": {}}
    _save()
    return {"name": project_name, "external_id": PROJECTS[project_name]["id"], "path": project_path, "created": True}


@server.tool()
async def delete_project(project_name: str, delete_notes: bool = False) -> dict:
    """Delete a project. Its note files stay on disk unless delete_notes=True."""
    project = PROJECTS.pop(project_name, None)
    if project is None:
        raise ValueError(f"Project not found: {project_name!r}")
    if delete_notes:
        shutil.rmtree(project["path"], ignore_errors=True)
    _save()
    return {"deleted": project_name}


def _write(project: dict, title: str, content: str, directory: str) -> dict:
    folder = Path(project["path"]) / directory
    folder.mkdir(parents=True, exist_ok=True)
    (folder / (re.sub(r"[^\w-]+", "-", title) + ".md")).write_text(content)
    project["notes"][title] = content
    _save()
    return {"title": title, "permalink": f"{directory}/{title}"}


def _search(project: dict, query: str | None, page_size: int, output_format: str) -> dict | str:
    words = set(WORD.findall((query or "").lower()))
    hits = []
    for title, content in project["notes"].items():
        overlap = len(words & set(WORD.findall(content.lower())))
        if overlap:
            hits.append({"title": title, "content": content, "score": float(overlap), "type": "entity"})
    hits.sort(key=lambda h: -h["score"])
    if output_format == "json":
        return {"results": hits[:page_size], "current_page": 1}  # the SDK wraps it: {"result": {...}}
    return "# Search Results\n" + "\n".join(f"### {h['title']}" for h in hits[:page_size])


if IDS_ONLY:
    @server.tool()
    async def write_note(title: str, content: str, directory: str, project_id: str) -> dict:
        """Create a markdown note in the project with this id."""
        return _write(_project(project_id=project_id), title, content, directory)

    @server.tool()
    async def search_notes(project_id: str, query: str | None = None, page_size: int = 10,
                           output_format: Format = "text") -> dict | str:
        """Search notes in the project with this id."""
        return _search(_project(project_id=project_id), query, page_size, output_format)
else:
    @server.tool()
    async def write_note(title: str, content: str, directory: str, project: str | None = None) -> dict:
        """Create a markdown note. directory is required."""
        return _write(_project(name=project or "main"), title, content, directory)

    @server.tool()
    async def search_notes(query: str | None = None, project: str | None = None, page_size: int = 10,
                           output_format: Format = "text") -> dict | str:
        """Search notes, observations, and relations in one project."""
        return _search(_project(name=project or "main"), query, page_size, output_format)


@server.tool()
async def search(query: str) -> dict:
    """OpenAI/ChatGPT connector search adapter. Other MCP clients receive an unsupported-client
    error; use search_notes instead."""
    return {"results": [], "error": "Unsupported MCP client"}


@server.tool()
async def find(path: str = "/", name: str | None = None) -> dict:
    """Recursively list files by name glob."""
    return {"files": []}


@server.tool()
async def delete_note(identifier: str, project: str | None = None) -> dict:
    """Delete a note by title or permalink."""
    return {"deleted": False}


@server.tool()
async def list_memory_projects() -> dict:
    """List all available projects."""
    return {"projects": sorted(PROJECTS)}


if __name__ == "__main__":
    _save()  # its registry, created at start as basic-memory creates its config
    server.run()
