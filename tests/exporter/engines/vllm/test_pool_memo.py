"""The vLLM adapter reads the pools from `cache_config_info`'s labels again only when those series are not
the last page's (`VllmAdapter._pools_of`): a kept adapter must give what a fresh one gives, hints included,
page after page, as the info series change (another pool size, data parallelism without
`kv_cache_size_tokens`, `num_gpu_blocks="None"`) and come back. Pages: the real vLLM 0.32 capture with its
info line edited.
"""

from __future__ import annotations

from pathlib import Path

from exporter.engines import adapter
from exporter.parse import PageParser

CAPTURE = Path(__file__).resolve().parents[3] / "fixtures" / "vllm" / "metrics-ngram-after.txt"


def _pages() -> list[str]:
    text = CAPTURE.read_text()
    lines = text.splitlines(keepends=True)
    i = next(n for n, line in enumerate(lines) if line.startswith("vllm:cache_config_info{"))
    info = lines[i]
    assert 'kv_cache_size_tokens="8192"' in info and 'num_gpu_blocks="64"' in info  # what the edits rely on
    bigger = info.replace('kv_cache_size_tokens="8192"', 'kv_cache_size_tokens="16384"')
    no_tokens = info.replace('kv_cache_size_tokens="8192",', "")
    dp = [no_tokens, no_tokens.replace('engine="0"', 'engine="1"')]  # num_gpu_blocks is the sum: halved
    unknown = no_tokens.replace('num_gpu_blocks="64"', 'num_gpu_blocks="None"')

    def page(new: list[str]) -> str:
        return "".join(lines[:i] + new + lines[i + 1:])
    return [text, text, page([bigger]), page([bigger]), page(dp), page(dp), page([unknown]), page([unknown]),
            text, page(dp)]


def test_a_kept_vllm_adapter_reads_the_pools_as_a_fresh_one_does() -> None:
    ad = adapter("vllm")
    parser = PageParser(ad.families, usable_only=True)
    seen_hints = set()
    for text in _pages():
        fresh = adapter("vllm")
        want = fresh.snapshot(PageParser(fresh.families, usable_only=True).parse(text), 0.0)
        got = ad.snapshot(parser.parse(text), 0.0)
        assert got == want
        seen_hints.update(got.version_hints)
    assert any(h.startswith("DP: num_gpu_blocks is the sum over 2 engines") for h in seen_hints)
    assert 'num_gpu_blocks="None": allocated pool unknown' in seen_hints
