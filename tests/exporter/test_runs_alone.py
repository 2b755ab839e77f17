"""The exporter ships alone as the sidecar: `python -m exporter` runs without importing the gate.

(The static rule "exporter never imports gate" is one of the floors in tests/test_layering.py.)
"""

from __future__ import annotations

import subprocess
import sys


def test_python_m_exporter_runs_without_importing_gate() -> None:
    code = ("import runpy, sys\n"
            "sys.argv = ['exporter', '--help']\n"
            "try:\n    runpy.run_module('exporter', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "assert not any(m == 'gate' or m.startswith('gate.') for m in sys.modules), 'gate imported'\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
