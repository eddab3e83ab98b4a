"`tfs handout`: solutions gone, checks folded, outputs cleared, the committed handout/ up to date, and bad input refused in one line."
import json, os, re, subprocess, sys, pathlib
import pytest
from transformers_scratch.handout import is_solution, make_handout, is_internal
ROOT = pathlib.Path(__file__).resolve().parents[1]

def tfs(*args, cwd=None):
    return subprocess.run(['tfs', *args], capture_output=True, text=True, cwd=cwd)

def test_handout(tmp_path):
    r = tfs('handout', '--src', str(ROOT/'nbs'), '--dest', str(tmp_path/'h'))
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    lessons = [p for p in (ROOT/'nbs').glob('*.ipynb') if not is_internal(json.loads(p.read_text()))]
    assert res['notebooks'] == len(lessons)
    n_solutions = n_folded = 0
    for p in lessons:
        orig = json.loads(p.read_text()); h = json.loads((tmp_path/'h'/p.name).read_text())
        for c in h['cells']:
            if c['cell_type'] == 'code': assert not re.search(r'^\s*#\|', ''.join(c['source']), re.M), f"{p.name}: nbdev's lines are for developers"
        # cells keep their order; the writer drops developer cells, empty ones and the solutions' re-checks
        ids, at, pairs = [c['id'] for c in orig['cells']], 0, []
        for c in h['cells']:
            assert c['id'] in ids[at:], f"{p.name}: cell {c['id']} out of order or not from the solutions edition"
            at = ids.index(c['id'], at) + 1; pairs.append((orig['cells'][at - 1], c))
        for i, (o, c) in enumerate(pairs):
            assert c.get('outputs', []) == []
            s, hs = ''.join(o['source']), ''.join(c['source'])
            if o['cell_type'] == 'markdown' and i < 4 and 'colab-badge.svg' in s:                    # the badge opens the learner's edition, which says where the other is
                assert f'blob/main/handout/{p.name})' in hs and f'(https://colab.research.google.com/github/transformers-scratch/transformers_scratch/blob/main/nbs/{p.name})' in hs
                assert "Learner's edition" in hs and "Solutions edition" in s
            if is_solution(s):
                n_solutions += 1
                assert 'Solution removed' in hs and 'def ' not in hs
                # what was defined and not returned by the exercise's check is importable from the library
                line = hs.splitlines()[-1]
                if not line.startswith('#'):
                    assert line.startswith('from transformers_scratch.')
                    exec(line, {})
            if c.get('metadata') == {'cellView': 'form'}:
                assert hs.startswith('# @title '), f"{p.name}: a folded cell without a title: {hs[:60]!r}"   # Colab shows its first line
                if 'check' in hs.splitlines()[0] and not is_solution(s): n_folded += 1
    assert n_solutions >= 12, f"the course promises at least 12 exercises, found {n_solutions} solution cells"
    assert n_folded >= 12, f"long check definitions should be folded in the handout, found {n_folded}"

def test_committed_handout_is_up_to_date(tmp_path):
    make_handout(ROOT/'nbs', tmp_path/'h')
    made = sorted(p.name for p in (tmp_path/'h').iterdir())
    assert made == sorted(p.name for p in (ROOT/'handout').iterdir()), "handout/ is stale: run `tfs handout`"
    for n in made:
        assert (tmp_path/'h'/n).read_text(encoding='utf-8') == (ROOT/'handout'/n).read_text(encoding='utf-8'), \
            f"handout/{n} is stale: run `tfs handout` and commit handout/"

def test_the_header_says_whether_there_are_exercises(tmp_path):
    "A lesson without exercises does not promise any: both editions say it is to be run and read"
    made = make_handout(ROOT/'nbs', tmp_path/'h')
    for h in made:
        nb, hb = json.loads((ROOT/'nbs'/h.name).read_text()), json.loads(h.read_text())
        ex = any(re.search(r'^\s*\w+\s*=\s*check_\w+\(\s*my_', ''.join(c['source']), re.M) for c in nb['cells'] if c['cell_type'] == 'code')
        top = ''.join(''.join(c['source']) for c in hb['cells'][:3])
        if 'colab-badge.svg' not in top: continue        # index.ipynb: the README, no edition header
        assert ('yours to solve' in top) == ex and ('without exercises' in top) != ex, h.name

def test_every_lesson_says_which_edition():
    for p in sorted((ROOT/'nbs').glob('[0-9]*.ipynb')):
        if is_internal(json.loads(p.read_text())): continue
        top = ''.join(''.join(c['source']) for c in json.loads(p.read_text())['cells'][:4])
        assert 'Solutions edition' in top and f'handout/{p.name}' in top, p.name

# Bad input: exit code 2, one line on stderr naming the problem, no traceback, nothing written.
def lesson(tmp_path, name='03_attention.ipynb', text=None):
    src = tmp_path/'nbs'; src.mkdir(exist_ok=True)
    (src/'01_ok.ipynb').write_text((ROOT/'nbs'/'01_selfattention.ipynb').read_text(encoding='utf-8'), encoding='utf-8')
    if text is not None: (src/name).write_text(text, encoding='utf-8')
    return src

def refused(r, *words):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert 'Traceback' not in r.stderr and r.stdout == ''
    for w in words: assert w in r.stderr, (w, r.stderr)

def listing(d): return sorted(str(p.relative_to(d)) for p in d.rglob('*'))

BAD_SOLUTION = json.dumps({'cells': [{'cell_type': 'code', 'metadata': {}, 'outputs': [],
                                      'source': ['#| export\n', '# @title Solution\n', 'def f(x:\n']}]})

@pytest.mark.parametrize('name,text,words', [
    ('02_broken.ipynb', '{"cells": [', ['02_broken.ipynb', 'not a lesson notebook']),
    ('02_list.ipynb', '[1, 2]', ['02_list.ipynb']),
    ('02_nocells.ipynb', '{"metadata": {}}', ['02_nocells.ipynb']),
    ('02_badsol.ipynb', BAD_SOLUTION, ['02_badsol.ipynb', 'does not parse']),
], ids=['malformed-json', 'not-a-dict', 'no-cells', 'solution-syntax-error'])
def test_bad_notebook_leaves_nothing(tmp_path, name, text, words):
    src = lesson(tmp_path, name, text)
    before = listing(tmp_path)
    refused(tfs('handout', '--src', str(src), '--dest', str(tmp_path/'handout')), *words)
    assert listing(tmp_path) == before                       # no handout folder, no temporary folder
    (tmp_path/'handout').mkdir(); (tmp_path/'handout'/'01_ok.ipynb').write_text('old')
    refused(tfs('handout', '--src', str(src), '--dest', str(tmp_path/'handout')), *words)
    assert (tmp_path/'handout'/'01_ok.ipynb').read_text() == 'old' and listing(tmp_path/'handout') == ['01_ok.ipynb']

@pytest.mark.parametrize('dest', ['nbs', 'nbs/handout', 'nbs/a/b'])
def test_dest_in_src_refused(tmp_path, dest):
    src = lesson(tmp_path)
    before = listing(tmp_path)
    refused(tfs('handout', '--src', str(src), '--dest', str(tmp_path/dest)), 'dest')
    assert listing(tmp_path) == before
    refused(tfs('handout', '--src', 'nbs', '--dest', dest.replace('nbs', 'nbs/.', 1), cwd=tmp_path), 'dest')   # relative too
    assert listing(tmp_path) == before

def test_dest_under_a_file_refused(tmp_path):
    src = lesson(tmp_path)
    (tmp_path/'afile').write_text('x')
    before = listing(tmp_path)
    for dest in ('afile', 'afile/sub', 'afile/sub/deeper'):
        refused(tfs('handout', '--src', str(src), '--dest', str(tmp_path/dest)), 'afile', 'not a folder')
    assert listing(tmp_path) == before

def test_no_notebooks_says_where_to_get_them(tmp_path):
    refused(tfs('handout', cwd=tmp_path), 'src', 'handout')                  # from an empty folder: nbs/ is not there
    (tmp_path/'empty').mkdir()
    refused(tfs('handout', '--src', 'empty', cwd=tmp_path), 'no notebooks')
    assert listing(tmp_path) == ['empty']

def test_existing_handout_updated_in_place(tmp_path):
    src = lesson(tmp_path)
    dest = tmp_path/'handout'; dest.mkdir(); (dest/'README.txt').write_text('mine')
    r = tfs('handout', '--src', str(src), '--dest', str(dest))
    assert r.returncode == 0, r.stderr
    assert listing(dest) == ['01_ok.ipynb', 'README.txt'] and (dest/'README.txt').read_text() == 'mine'
    assert not [p for p in tmp_path.iterdir() if p.name.startswith('.')]     # no temporary folder left

def snapshot(d): return {str(p.relative_to(d)): (p.read_bytes() if p.is_file() else 'dir') for p in sorted(d.rglob('*'))}

def test_existing_handout_is_swapped_whole(tmp_path):
    "Notebooks the writer no longer writes are gone after the swap; your own files (and folders) are carried over"
    src = lesson(tmp_path)
    dest = tmp_path/'handout'; (dest/'mine').mkdir(parents=True)
    (dest/'99_removed_lesson.ipynb').write_text('{}'); (dest/'01_ok.ipynb').write_text('old'); (dest/'mine'/'notes.md').write_text('x')
    r = tfs('handout', '--src', str(src), '--dest', str(dest))
    assert r.returncode == 0, r.stderr
    assert listing(dest) == ['01_ok.ipynb', 'mine', 'mine/notes.md'] and (dest/'mine'/'notes.md').read_text() == 'x'
    assert (dest/'01_ok.ipynb').read_text() != 'old' and sorted(p.name for p in tmp_path.iterdir()) == ['handout', 'nbs']

def test_a_folder_where_a_notebook_goes_leaves_dest_as_it_was(tmp_path):
    "One notebook name is a folder in an existing --dest: refused in one line before anything is written"
    src = lesson(tmp_path, '02_two.ipynb', (ROOT/'nbs'/'02_masks.ipynb').read_text(encoding='utf-8'))
    dest = tmp_path/'handout'; (dest/'02_two.ipynb').mkdir(parents=True); (dest/'01_ok.ipynb').write_text('old')
    (dest/'02_two.ipynb'/'inside').write_text('keep')
    before = snapshot(tmp_path)
    refused(tfs('handout', '--src', str(src), '--dest', str(dest)), '02_two.ipynb', 'is a folder, not a notebook')
    assert snapshot(tmp_path) == before

def test_a_write_fault_leaves_dest_as_it_was(tmp_path):
    "A full disk (stand-in: RLIMIT_FSIZE) halfway through the writing: one line naming --dest, the old handout intact"
    src = lesson(tmp_path, '02_two.ipynb', (ROOT/'nbs'/'02_masks.ipynb').read_text(encoding='utf-8'))
    dest = tmp_path/'handout'; dest.mkdir(); (dest/'01_ok.ipynb').write_text('old'); (dest/'00_stale.ipynb').write_text('stale')
    before = snapshot(tmp_path)
    small = min(len(json.dumps(json.loads((src/n).read_text()))) for n in ('01_ok.ipynb', '02_two.ipynb')) // 2   # one notebook fails
    import resource
    r = subprocess.run(['tfs', 'handout', '--src', str(src), '--dest', str(dest)], capture_output=True, text=True,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (small, small)))
    refused(r, 'could not write the handout', 'handout', 'nothing was changed')
    assert snapshot(tmp_path) == before

# A failure after the checks (the swap refused, a folder of yours it cannot read, nowhere to build): one line naming --dest
# and the file, --dest as it was, no temporary folder left. Faults a root user never meets are injected in a fresh Python.
def tfs_with(fault, *args):
    "`tfs args` in a fresh Python where `fault` (code) has patched the os first: the CompletedProcess"
    code = f"import os, sys, shutil\n{fault}\nfrom transformers_scratch.cli import main\nmain(sys.argv[1:])"
    return subprocess.run([sys.executable, '-c', code, *map(str, args)], capture_output=True, text=True)

def old_handout(tmp_path):
    "--src with one lesson, and a --dest that holds an earlier handout, a stale notebook and a read-only folder of yours"
    src = lesson(tmp_path)
    dest = tmp_path/'handout'; (dest/'mine').mkdir(parents=True)
    (dest/'01_ok.ipynb').write_text('old'); (dest/'00_stale.ipynb').write_text('stale'); (dest/'mine'/'notes.md').write_text('x')
    (dest/'mine').chmod(0o555)
    return src, dest

def no_temporary_folder(tmp_path): assert sorted(p.name for p in tmp_path.iterdir()) == ['handout', 'nbs']

SWAP_FAULTS = {   # the new folder cannot take --dest's place; --dest is put back
    'rename': "r = os.rename\ndef rename(a, b):\n    if os.path.basename(str(a)).startswith('.handout-') and not str(a).endswith('-old'): raise PermissionError(13, 'Permission denied', str(b))\n    return r(a, b)\nos.rename = rename",
    'unreadable': "s = os.scandir\ndef scandir(p='.'):\n    if str(p).endswith(os.sep + 'mine'): raise PermissionError(13, 'Permission denied', str(p))\n    return s(p)\nos.scandir = scandir",
}

@pytest.mark.parametrize('fault,words', [('rename', []), ('unreadable', ["handout/mine'"])], ids=list(SWAP_FAULTS))
def test_a_failure_after_the_checks_is_one_line_and_leaves_dest_as_it_was(tmp_path, fault, words):
    src, dest = old_handout(tmp_path)
    before = snapshot(tmp_path)
    try:
        r = tfs_with(SWAP_FAULTS[fault], 'handout', '--src', src, '--dest', dest)
        refused(r, f"--dest {str(dest)!r}: could not write the handout", 'Permission denied', 'nothing was changed there', *words)
        assert snapshot(tmp_path) == before
        no_temporary_folder(tmp_path)   # the temporary folder held a read-only copy of mine/: removed all the same
    finally: (dest/'mine').chmod(0o755)

def test_read_only_folders_of_yours_leave_no_temporary_folder(tmp_path):
    "A read-only folder of yours in --dest: carried over as it is, and the old --dest removed whole after the swap"
    src, dest = old_handout(tmp_path)
    try:
        r = tfs('handout', '--src', str(src), '--dest', str(dest))
        assert r.returncode == 0, r.stderr
        assert listing(dest) == ['01_ok.ipynb', 'mine', 'mine/notes.md'] and (dest/'mine').stat().st_mode & 0o777 == 0o555
        no_temporary_folder(tmp_path)
    finally: (dest/'mine').chmod(0o755)

def test_nowhere_to_build_is_one_line(tmp_path):
    "--dest in a folder where no folder can be made (/proc): one line naming --dest and that folder"
    refused(tfs('handout', '--src', str(lesson(tmp_path)), '--dest', '/proc/handout'), "--dest '/proc/handout'",
            "no folder can be made in '/proc'", 'nothing was changed')

def test_a_fifo_where_a_notebook_goes_is_named(tmp_path):
    src = lesson(tmp_path)
    dest = tmp_path/'handout'; dest.mkdir(); os.mkfifo(dest/'01_ok.ipynb')
    refused(tfs('handout', '--src', str(src), '--dest', str(dest)), '--dest', "01_ok.ipynb' is not a regular file, not a notebook")
    assert listing(dest) == ['01_ok.ipynb']

def test_a_symbolic_link_that_loops_is_one_line(tmp_path):
    "--dest through a link to itself (pathlib raises RuntimeError, not OSError) and a notebook of --src that loops: one line each"
    src = lesson(tmp_path)
    (tmp_path/'loop').symlink_to('loop')
    for dest in ('loop', 'loop/handout'):
        refused(tfs('handout', '--src', str(src), '--dest', str(tmp_path/dest)), f"--dest {str(tmp_path/dest)!r} cannot be looked up", 'give a folder')
    (src/'02_loop.ipynb').symlink_to('02_loop.ipynb')
    refused(tfs('handout', '--src', str(src), '--dest', str(tmp_path/'handout')), '--src', "02_loop.ipynb' is not a lesson notebook", 'cannot be read')
    assert listing(tmp_path) == ['loop', 'nbs', 'nbs/01_ok.ipynb', 'nbs/02_loop.ipynb']

@pytest.mark.parametrize('dest', ['.', '..'])
def test_dest_holding_src_refused(tmp_path, dest):
    "--dest . (or above): the swap would replace the folder of the notebooks themselves with a copy; one line, nothing written"
    (tmp_path/'course').mkdir(); src = lesson(tmp_path/'course')
    before = listing(tmp_path)
    refused(tfs('handout', '--src', 'nbs', '--dest', dest, cwd=tmp_path/'course'), f"--dest {dest!r} holds the notebook folder --src 'nbs'")
    assert listing(tmp_path) == before and src.is_dir()
