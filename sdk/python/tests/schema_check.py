"""Checks frames the SDK wrote against the checked-in JSON Schema of the
protocol (``schema/ext-frame.schema.json`` at the repository root, draft
2020-12). Two checks: the schema itself (with ``jsonschema``), and a stricter
one of ours: every key the SDK writes must be a property the schema names,
so a misspelt field (which the open schema would let through) is caught."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from harness import REPO_DIR

SCHEMA_DIR = REPO_DIR / "schema"
EXT_FRAME_SCHEMA = SCHEMA_DIR / "ext-frame.schema.json"


def load_ext_schema() -> Optional[Dict[str, Any]]:
    """The extension → host schema, or None when it is not checked in (yet)."""
    if not EXT_FRAME_SCHEMA.is_file():
        return None
    return json.loads(EXT_FRAME_SCHEMA.read_text())


class FrameChecker:
    def __init__(self, schema: Dict[str, Any]) -> None:
        try:
            import jsonschema
        except ImportError:  # pragma: no cover - run-tests.sh installs it
            raise AssertionError(
                "the schema checks need jsonschema: pip install jsonschema (run-tests.sh does)"
            ) from None
        self._jsonschema = jsonschema
        self.root = schema
        self._defs = schema.get("$defs", {})
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        self._cls = cls
        self._validator = cls(schema)

    def problems(self, frame: Any) -> List[str]:
        """Everything wrong with ``frame``; empty when it conforms."""
        found = [
            f"{'/'.join(map(str, e.absolute_path)) or '(frame)'}: {e.message}"
            for e in self._validator.iter_errors(frame)
        ]
        if not found:
            self._closed(self.root, frame, "", found)
        return found

    # ------------------------------------------------------------ the strict check

    def _valid(self, node: Dict[str, Any], value: Any) -> bool:
        return self._cls({**node, "$defs": self._defs}).is_valid(value)

    def _parts(self, node: Any, value: Any) -> List[Dict[str, Any]]:
        """``node`` and every schema it applies through $ref, allOf and the
        oneOf/anyOf branches ``value`` matches."""
        if not isinstance(node, dict):
            return []
        parts = [node]
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            parts += self._parts(self._defs.get(ref[len("#/$defs/") :]), value)
        for sub in node.get("allOf", []):
            parts += self._parts(sub, value)
        for key in ("oneOf", "anyOf"):
            for branch in node.get(key, []):
                if self._valid(branch, value):
                    parts += self._parts(branch, value)
        return parts

    def _closed(self, node: Dict[str, Any], value: Any, path: str, found: List[str]) -> None:
        parts = self._parts(node, value)
        if isinstance(value, dict):
            named = [p for p in parts if "properties" in p]
            open_ = any(p.get("additionalProperties", False) not in (False, None) for p in parts)
            if named and not open_:
                known = set().union(*(p["properties"] for p in named))
                for key in sorted(set(value) - known):
                    found.append(f"{path or '(frame)'}: field {key!r} is not in the schema")
            for key, item in value.items():
                for p in named:
                    if key in p["properties"]:
                        self._closed(p["properties"][key], item, f"{path}/{key}", found)
        elif isinstance(value, list):
            for p in parts:
                if isinstance(p.get("items"), dict):
                    for i, item in enumerate(value):
                        self._closed(p["items"], item, f"{path}/{i}", found)


def check_frames(frames: List[Dict[str, Any]], where: str) -> None:
    """Fails with every non-conforming frame; does nothing without a schema."""
    schema = load_ext_schema()
    if schema is None or not frames:
        return
    checker = FrameChecker(schema)
    bad = []
    for frame in frames:
        problems = checker.problems(frame)
        if problems:
            bad.append(f"{json.dumps(frame)[:300]}\n    " + "\n    ".join(problems))
    assert not bad, f"{len(bad)} frame(s) from {where} do not match {EXT_FRAME_SCHEMA}:\n" + "\n".join(bad)
