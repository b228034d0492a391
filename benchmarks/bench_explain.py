"""`explain` on crafted 1 MB texts: wall and CPU seconds per text (target: each under 1 s).

The texts are those that made Python's backtracking `re` run for minutes (nested wildcards
searched from every start, a repeated optional prefix, an unclosed log-prefix bracket) and a
log of 70,000 one-line records; the matching is RE2's (inkling_compat/explain.py).

    python benchmarks/bench_explain.py [--out build/bench-explain.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/bench-explain.json")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from hostile.test_explain_linear import CRAFTED

    from inkling_compat import explain

    explain.findings("warm up: ValueError: x")
    rows = []
    print(f"{'text':<26} {'bytes':>9} {'wall s':>8} {'cpu s':>7}")
    for name, text in CRAFTED.items():
        text = text[:1_000_000]
        best_wall = best_cpu = float("inf")
        for _ in range(args.repeat):
            w0, c0 = time.perf_counter(), time.process_time()
            explain.findings(text)
            best_wall, best_cpu = min(best_wall, time.perf_counter() - w0), min(best_cpu, time.process_time() - c0)
        rows.append({"text": name, "bytes": len(text.encode()), "wall_s": round(best_wall, 3), "cpu_s": round(best_cpu, 3)})
        print(f"{name:<26} {len(text.encode()):>9} {best_wall:>8.3f} {best_cpu:>7.3f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": rows, "target_s": 1.0}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
