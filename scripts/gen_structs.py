"""Write parsers/_structs_gen.py from the construct declarations of parsers/structs.py.

Run after changing a declaration or a constant there:  python scripts/gen_structs.py [OUT]
(OUT: another file to write instead, as the test does; tests/test_structs.py fails while the
committed file differs from what this writes).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ibdtool.parsers.structs import generated_module  # noqa: E402

if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "parsers" / "_structs_gen.py"
    out.write_text(generated_module())
