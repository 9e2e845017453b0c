"""The text an editor shows for each LSP answer, taken out of the answer's JSON.

Each server is free in how it shapes an answer (a hover is Markdown, a plain string or a list of
marked strings; completion is a list or a ``CompletionList``; a definition is one location, a list,
or location links); these functions give the checks one shape for all four.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse


def markup_text(content: Any) -> str:
    """The text of a ``MarkupContent``, a ``MarkedString`` or a list of them (``None``: empty)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(markup_text(part) for part in content)
    return str(content.get("value", ""))


def hover_text(answer: Any) -> str:
    """What a hover shows: its contents as one text (empty when the server has nothing to show)."""
    return markup_text(answer.get("contents")) if answer else ""


@dataclass(frozen=True)
class CompletionItem:
    """One completion entry as the editor's list and its detail pane show it."""

    label: str
    kind: int | None
    #: the label's detail and description, the item's detail and its documentation, in one text
    shown: str


def completion_items(answer: Any) -> list[CompletionItem]:
    """The items of a completion answer (a list or a ``CompletionList``)."""
    raw = answer.get("items", []) if isinstance(answer, dict) else (answer or [])
    return [completion_item(item) for item in raw]


def completion_item(item: dict[str, Any]) -> CompletionItem:
    """One item, with what every field of it shows joined into one text."""
    label_details = item.get("labelDetails") or {}
    parts = [
        str(label_details.get("detail", "")),
        str(label_details.get("description", "")),
        str(item.get("detail", "")),
        markup_text(item.get("documentation")),
    ]
    return CompletionItem(item["label"], item.get("kind"), "\n".join(p for p in parts if p))


@dataclass(frozen=True)
class Signature:
    """The signature help's active signature: its label, documentation and active parameter."""

    label: str
    documentation: str
    parameters: list[str]
    active_parameter: int | None


def signature(answer: Any) -> Signature | None:
    """The active signature of a ``SignatureHelp`` (None when the server offers none)."""
    if not answer or not answer.get("signatures"):
        return None
    signatures = answer["signatures"]
    active = signatures[min(answer.get("activeSignature") or 0, len(signatures) - 1)]
    label = active["label"]
    parameters = []
    for parameter in active.get("parameters", []):
        spot = parameter["label"]
        parameters.append(label[spot[0] : spot[1]] if isinstance(spot, list) else spot)
    active_parameter = active.get("activeParameter", answer.get("activeParameter"))
    return Signature(label, markup_text(active.get("documentation")), parameters, active_parameter)


@dataclass(frozen=True)
class Place:
    """Where a definition answer lands: a file and a 0-based line."""

    path: Path
    line: int


def definition_places(answer: Any) -> list[Place]:
    """The places of a definition answer (a ``Location``, a list of them, or ``LocationLink`` s)."""
    if not answer:
        return []
    locations = answer if isinstance(answer, list) else [answer]
    places = []
    for location in locations:
        uri = location.get("targetUri", location.get("uri"))
        spot = location.get("targetSelectionRange", location.get("range"))
        places.append(Place(Path(unquote(urlparse(uri).path)), spot["start"]["line"]))
    return places
