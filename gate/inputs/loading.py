"""Safe reading of the files a user hands the gate: plan YAML, config.json, windows JSON, captures.

Why one module: a hostile or broken input must end as one line on stderr and exit 3, never
as a traceback (exit 1 means "fail" here) or a hang. The ways a file read goes wrong are the
same for every reader, so the limits live here once:

- only regular files are read: `/dev/zero` would be read forever and a FIFO blocks `open()`
  until a writer appears, so the path is `stat`ed first and opened with `O_NONBLOCK`, and
  the opened descriptor is checked again (the path may have been swapped in between);
- a size limit per kind of file (a plan is a few KiB; a config.json a few hundred);
- a nesting-depth limit (PyYAML's composer and json's decoder recurse: a deeply nested
  document ends in RecursionError otherwise);
- a limit on the digits of an integer (Python refuses > 4,300 digits with a ValueError deep
  inside the parser; far fewer are already absurd for any field we read);
- duplicate keys refused in YAML and JSON (PyYAML and json are silently last-wins, so
  `target_acceptance_length` written twice would judge whichever came last);
- YAML aliases refused in plans: an alias bomb ("billion laughs") is a few lines that expand
  into a structure every later walk visits exponentially often.

Every problem raises `InputError`, whose message is one line naming the file.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode

from gate.status import InputError


@dataclass(frozen=True)
class Limits:
    """How large a file may be, how deeply nested, and how many digits one integer may have."""

    max_bytes: int
    max_depth: int = 32
    max_int_digits: int = 24


# A plan is hand-written YAML of a few KiB; 1 MiB leaves room for long descriptions.
PLAN_LIMITS = Limits(max_bytes=1 << 20)
# Hugging Face config.json files are < 100 KiB (the largest fixture is ~6 KiB); a
# safetensors index lists one entry per tensor (DeepSeek-V3's is ~9 MiB).
CONFIG_LIMITS = Limits(max_bytes=32 << 20)
# An exporter windows document holds at most --history windows (default 1,000).
WINDOWS_LIMITS = Limits(max_bytes=16 << 20)
# A secret (token, password) file holds one line.
SECRET_LIMITS = Limits(max_bytes=64 << 10)
# A recorded /metrics page: a real vLLM page is ~50 KB, the exporter's own generated 32-stream page 1.3 MB.
CAPTURE_LIMITS = Limits(max_bytes=64 << 20)
# A probe's own prompts (JSONL, one object per line, at most 10,000 lines): 64 MiB is 6.7 KB a prompt at the
# line limit, room for long-context traffic; each line is one JSON object a few levels deep.
PROMPTS_LIMITS = Limits(max_bytes=64 << 20, max_depth=8)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_regular(path: str | Path, what: str) -> Path:
    """The path if it names an existing regular file (symlinks followed); InputError otherwise.

    Readers that cannot use `read_bytes` (the exporter's capture reader) call this first, so a
    FIFO or a device never reaches their `open()`.
    """
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InputError(f"{what} not found: {p}") from None
    except OSError as e:
        raise InputError(f"cannot read {what} {p}: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{what} {p} is {_kind(st.st_mode)}, not a regular file")
    return p


def read_bytes(path: str | Path, what: str, max_bytes: int) -> bytes:
    """The whole file, refusing non-regular files and anything over `max_bytes`."""
    p = check_regular(path, what)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise InputError(f"cannot read {what} {p}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{what} {p} is {_kind(st.st_mode)}, not a regular file")
        if st.st_size > max_bytes:
            raise InputError(f"{what} {p} is {st.st_size:,} bytes, over the {max_bytes:,}-byte limit")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:  # the file grew after fstat
                raise InputError(f"{what} {p} is over the {max_bytes:,}-byte limit")
    except OSError as e:
        raise InputError(f"cannot read {what} {p}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text(path: str | Path, what: str, max_bytes: int) -> str:
    """`read_bytes` decoded as UTF-8 (a binary file is refused in one line)."""
    raw = read_bytes(path, what, max_bytes)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{what} {path} is not UTF-8 text (byte {e.start})") from None


# ---------------------------------------------------------------------------------------------
# YAML


def read_capture(path: str | Path, what: str = "capture") -> tuple[str, float]:
    """A recorded `/metrics` page as text, with the file's modification time (its timestamp).

    The one reader of capture files for every gate command (`check --metrics`, `tune --captures`):
    a FIFO, a device or a page over `CAPTURE_LIMITS` is refused at once, never waited on.
    """
    raw = read_bytes(path, what, CAPTURE_LIMITS.max_bytes)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{what} {path}: not UTF-8 text, not a Prometheus exposition") from None
    try:
        mtime = os.stat(path).st_mtime
    except OSError as e:
        raise InputError(f"cannot read {what} {path}: {e.strerror or e}") from None
    return text, mtime


def read_jsonl(path: str | Path, what: str, limits: Limits, max_lines: int) -> list[tuple[int, Any]]:
    """(line number, document) for every non-blank line of a JSON Lines file, each parsed by `parse_json`.

    The file goes through `read_text` (regular, at most `limits.max_bytes`) and every line through the
    same duplicate-key, depth and digit limits as a JSON file; more than `max_lines` documents is refused.
    """
    text = read_text(path, what, limits.max_bytes)
    out: list[tuple[int, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if len(out) >= max_lines:
            raise InputError(f"{what} {path}: more than {max_lines:,} lines")
        out.append((n, parse_json(line, f"{what} {path}:{n}", limits)))
    return out


def read_secret(path: str | Path, what: str) -> str:
    """A secret file (a bearer token, a password): regular, at most `SECRET_LIMITS`, one trailing newline dropped.

    The message names the file, never its content.
    """
    text = read_text(path, what, SECRET_LIMITS.max_bytes)
    return text[:-1] if text.endswith("\n") else text


def _yaml_loader(limits: Limits) -> type[yaml.SafeLoader]:
    """A SafeLoader subclass enforcing `limits`; a new class per call so no state is shared."""

    class _Loader(yaml.SafeLoader):
        _depth = 0

        def compose_node(self, parent: Node | None, index: Any) -> Node | None:
            # The composer recurses once per nesting level: refuse before Python's stack does.
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise InputError(f"YAML aliases (*{event.anchor}) are not allowed{_at(event.start_mark)}")
            self._depth += 1
            if self._depth > limits.max_depth:
                mark = self.peek_event().start_mark
                raise InputError(f"nested deeper than {limits.max_depth} levels{_at(mark)}")
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
            if isinstance(node, MappingNode):
                seen: dict[Any, Node] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        raise InputError(f"YAML merge keys (<<) are not allowed{_at(key_node.start_mark)}")
                    key = self.construct_object(key_node, deep=True)
                    try:
                        hash(key)
                    except TypeError:
                        raise InputError(f"a mapping key must be a scalar{_at(key_node.start_mark)}") from None
                    if key in seen:
                        raise InputError(f"duplicate key {key!r}{_at(key_node.start_mark)} "
                                         f"(first at line {seen[key].start_mark.line + 1})")
                    seen[key] = key_node
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_int(self, node: ScalarNode) -> int:
            digits = sum(ch.isdigit() for ch in str(node.value))
            if digits > limits.max_int_digits:
                raise InputError(f"integer with {digits} digits (limit {limits.max_int_digits}){_at(node.start_mark)}")
            return int(super().construct_yaml_int(node))

        def construct_yaml_float(self, node: ScalarNode) -> float:
            if len(str(node.value)) > 64:
                raise InputError(f"number of {len(str(node.value))} characters{_at(node.start_mark)}")
            return float(super().construct_yaml_float(node))

    _Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
    _Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_yaml_float)
    return _Loader


def _at(mark: Any) -> str:
    return f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""


def parse_yaml(text: str, what: str, limits: Limits = PLAN_LIMITS) -> Any:
    """One YAML document under `limits`; every problem is InputError naming `what`."""
    if len(text.encode("utf-8")) > limits.max_bytes:
        raise InputError(f"{what} is over the {limits.max_bytes:,}-byte limit")
    loader = _yaml_loader(limits)(text)
    try:
        return loader.get_single_data()
    except InputError as e:
        raise InputError(f"{what}: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or "invalid YAML"
        if isinstance(e, ConstructorError) and getattr(e, "problem", None):
            problem = str(e.problem)
        raise InputError(f"{what} is not valid YAML: {problem}{_at(mark)}") from None
    except (ValueError, RecursionError, MemoryError) as e:
        raise InputError(f"{what} is not usable YAML: {type(e).__name__}: {str(e).splitlines()[0][:120]}") from None
    finally:
        loader.dispose()


def load_yaml(path: str | Path, what: str = "plan", limits: Limits = PLAN_LIMITS) -> Any:
    """A YAML file read through `read_text` and parsed through `parse_yaml`."""
    text = read_text(path, what, limits.max_bytes)
    return parse_yaml(text, f"{what} {path}", limits)


# ---------------------------------------------------------------------------------------------
# JSON


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise InputError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _depth_over(doc: Any, limit: int) -> bool:
    """Whether `doc` nests deeper than `limit` (iterative: a deep document cannot overflow this)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > limit:
                return True
            children = node.values() if isinstance(node, dict) else node
            stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def parse_json(text: str, what: str, limits: Limits = CONFIG_LIMITS) -> Any:
    """One JSON document under `limits`; every problem is InputError naming `what`.

    `NaN` and `Infinity` are kept as floats here (config.json files are written by Python's
    json, which emits them); the fields the gate reads are checked for finiteness where they
    are used (gate.inputs.validation).
    """

    def parse_int(s: str) -> int:
        digits = len(s.lstrip("-"))
        if digits > limits.max_int_digits:
            raise InputError(f"integer with {digits} digits (limit {limits.max_int_digits})")
        return int(s)

    def parse_float(s: str) -> float:
        if len(s) > 64:
            raise InputError(f"number of {len(s)} characters")
        return float(s)

    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_int=parse_int, parse_float=parse_float)
    except InputError as e:
        raise InputError(f"{what}: {e}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{what} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise InputError(f"{what}: nested deeper than {limits.max_depth} levels") from None
    except (ValueError, MemoryError) as e:
        raise InputError(f"{what} is not usable JSON: {type(e).__name__}: {str(e).splitlines()[0][:120]}") from None
    if _depth_over(doc, limits.max_depth):
        raise InputError(f"{what}: nested deeper than {limits.max_depth} levels")
    return doc


def load_json(path: str | Path, what: str = "config", limits: Limits = CONFIG_LIMITS) -> Any:
    """A JSON file read through `read_text` and parsed through `parse_json`."""
    text = read_text(path, what, limits.max_bytes)
    return parse_json(text, f"{what} {path}", limits)
