"""What every fault case asserts: `tfs` run in-process, exactly one line on stderr, no traceback."""
import re
from transformers_scratch.cli import main

def tfs(capsys, *args):
    "`cli.main(args)` in-process: (exit code, stdout, stderr)"
    capsys.readouterr()
    try: main([str(a) for a in args]); code = 0
    except SystemExit as e: code = e.code
    out, err = capsys.readouterr()
    return code, out, err

def one_line(code, err, pattern, want=2):
    "Exit code `want`, exactly one non-empty line on stderr, no traceback (nor abort), and `pattern` (a regex) in it"
    lines = [l for l in err.splitlines() if l.strip()]
    assert code == want, (code, err)
    assert 'Traceback' not in err and 'Aborted' not in err and len(lines) == 1, err
    assert re.search(pattern, lines[0]), lines[0]
    return lines[0]
