"""Rules of the layout as tests: model code imports only torch, no module imports from a later lesson, `ls nbs/` is a
dependency order; one cache protocol; one trunk; defaults that agree; checkpoints of the old layout still load."""
import ast, json, re, subprocess, sys
from pathlib import Path
import pytest, torch

ROOT = Path(__file__).resolve().parents[1]
LIB, NBS = ROOT/'transformers_scratch', ROOT/'nbs'
MODEL_MODULES = ['runtime', 'selfattention', 'attention', 'masks', 'positions', 'block', 'models', 'generate', 'seq2seq', 'mlm']

def _nb_order():
    "Every lesson notebook in `ls nbs/` order, with the modules it exports to (`#| default_exp`, `#| export name`)"
    out = []
    for nb in sorted(NBS.glob('[0-9]*.ipynb')):
        mods = set()
        for c in json.loads(nb.read_text())['cells']:
            if c['cell_type'] != 'code': continue
            src = ''.join(c['source'])
            mods.update(re.findall(r'^#\|\s*default_exp\s+([\w.]+)', src, re.M))
            mods.update(re.findall(r'^#\|\s*export(?:s)?\s+([\w.]+)\s*$', src, re.M))
        out.append((nb, mods))
    return out

def _position():
    "module -> index of the notebook that writes it"
    pos = {}
    for i, (nb, mods) in enumerate(_nb_order()):
        for m in mods:
            assert m not in pos, f"{m} is written by two notebooks"
            pos[m] = i
    return pos

def _imports(tree, pkg_rel=True):
    "Names of our modules imported by `tree` (relative `.x` imports, or `transformers_scratch.x`)"
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ''
            if node.level >= 1: base = mod
            elif mod.startswith('transformers_scratch.'): base = mod[len('transformers_scratch.'):]
            elif mod == 'transformers_scratch': base = ''
            else: continue
            if base: names.add(base)
            else: names.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith('transformers_scratch.'): names.add(a.name[len('transformers_scratch.'):])
    return names

@pytest.mark.parametrize('mod', MODEL_MODULES)
def test_model_modules_import_without_fastai(mod):
    code = f"import sys; sys.modules['fastai'] = None; import transformers_scratch.{mod}"
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]

def test_no_module_imports_from_a_later_lesson():
    pos = _position()
    bad = []
    for f in LIB.rglob('*.py'):
        mod = '.'.join(f.relative_to(LIB).with_suffix('').parts)
        if mod not in pos: continue
        for dep in _imports(ast.parse(f.read_text())):
            dep = dep if dep in pos else dep.split('.')[0]
            if dep in pos and pos[dep] > pos[mod]: bad.append(f"{mod} imports {dep}")
    assert bad == [], bad

def test_ls_nbs_is_a_dependency_order():
    "A notebook uses the library only from itself and the notebooks listed before it"
    pos, bad = _position(), []
    for i, (nb, _) in enumerate(_nb_order()):
        for c in json.loads(nb.read_text())['cells']:
            if c['cell_type'] != 'code': continue
            src = '\n'.join(l for l in ''.join(c['source']).splitlines() if not l.lstrip().startswith(('%', '!', '#|')))
            try: tree = ast.parse(src)
            except SyntaxError: continue
            for dep in _imports(tree):
                dep = dep if dep in pos else dep.split('.')[0]
                if dep in pos and pos[dep] > i: bad.append(f"{nb.name} imports {dep}")
    assert bad == [], bad

# --- one cache protocol ---------------------------------------------------------------------------------------------

def test_selfattention_takes_any_cache_with_update():
    "Lesson 03's attention knows only `cache.update(k, v, pad_mask)`, not the cache's class"
    from transformers_scratch.attention import SelfAttention
    class Cat:
        k = v = None
        def update(self, k, v, pad_mask=None):
            self.k, self.v = (k, v) if self.k is None else (torch.cat([self.k, k], 2), torch.cat([self.v, v], 2))
            return self.k, self.v, None
    torch.manual_seed(0)
    sa, x = SelfAttention(16, 4, causal=True).eval(), torch.randn(2, 6, 16)
    c = Cat()
    steps = torch.cat([sa(x[:, :3], cache=c)] + [sa(x[:, i:i + 1], cache=c) for i in range(3, 6)], 1)
    torch.testing.assert_close(steps, sa(x), atol=1e-5, rtol=1e-4)
    src = (LIB/'attention.py').read_text() + (LIB/'models.py').read_text()
    assert 'KVCache' not in src.replace('`KVCache`', '') and 'isinstance(cache' not in src and "hasattr(cache" not in src

def test_seq2seq_uses_the_kv_cache():
    from transformers_scratch.seq2seq import Seq2SeqTransformer
    from transformers_scratch.generate import KVCache
    m = Seq2SeqTransformer(16, 4, 1, 12, 20, 22).eval()
    c = m.new_cache()
    assert isinstance(c, KVCache)
    src, tgt = torch.randint(4, 20, (2, 7)), torch.randint(4, 22, (2, 6))
    mem = m.encode(src)
    steps = torch.cat([m.decode(tgt[:, i:i + 1], mem, src != 1, c) for i in range(6)], 1)
    torch.testing.assert_close(steps, m.decode(tgt, mem, src != 1), atol=1e-5, rtol=1e-4)

# --- one trunk, defaults that agree -----------------------------------------------------------------------------------

def test_one_trunk_in_every_model():
    from transformers_scratch.models import Trunk, ClassificationTransformer, GenerationTransformer
    from transformers_scratch.mlm import MaskedLMTransformer
    for m in (ClassificationTransformer(16, 4, 2, 12, 30, 3), GenerationTransformer(16, 4, 2, 12, 30), MaskedLMTransformer(16, 4, 2, 12, 30)):
        assert isinstance(m.trunk, Trunk) and m.blocks is m.trunk.blocks and m.token_emb is m.trunk.token_emb
    assert '_build_encoder' not in (LIB/'models.py').read_text() + (LIB/'mlm.py').read_text()
    assert 'ClassificationTransformer.encode' not in (LIB/'mlm.py').read_text()

def test_classifier_loads_a_default_masked_lm_and_computes_the_same():
    from transformers_scratch.models import ClassificationTransformer
    from transformers_scratch.mlm import MaskedLMTransformer
    torch.manual_seed(0)
    mlm = MaskedLMTransformer(16, 4, 2, 12, 30).eval()
    clf = ClassificationTransformer(16, 4, 2, 12, 30, 2).load_encoder(mlm).eval()
    x = torch.cat([torch.ones(3, 2, dtype=torch.long), torch.randint(2, 30, (3, 8))], 1)   # front padding, pad_idx=1
    with torch.no_grad(): assert torch.equal(clf.encode(x), mlm.encode(x))

# --- checkpoints of the layout before the trunk ------------------------------------------------------------------------

def _old_layout(model):
    "The state_dict with the key names of the release before `Trunk` (`blocks.0...`, `token_emb.weight`)"
    return {k.removeprefix('trunk.'): v for k, v in model.state_dict().items()}

def test_old_lm_checkpoint_loads(tmp_path):
    from transformers_scratch.checkpoints import save_checkpoint
    from transformers_scratch.lm import load_lm, _FORMAT
    from transformers_scratch.models import GenerationTransformer
    torch.manual_seed(0)
    g = GenerationTransformer(16, 4, 2, 12, 30, prenorm=True)
    class Old(torch.nn.Module):
        def state_dict(self): return _old_layout(g)
    p = save_checkpoint(tmp_path/'old.pt', _FORMAT, Old(), data='tinyshakespeare', level='char',
                        config=dict(emb=16, heads=4, depth=2, seq_len=12, dropout=0.), vocab=sorted(chr(65 + i) for i in range(30)))
    assert 'blocks.0.norm1.weight' in torch.load(p, weights_only=True)['state_dict']
    ck = load_lm(p)
    g2 = GenerationTransformer(16, 4, 2, 12, 30, prenorm=True)
    g2.load_state_dict(ck['state_dict'])
    x = torch.randint(0, 30, (2, 9))
    assert torch.equal(g2.eval()(x), g.eval()(x))

def test_old_encoder_checkpoint_loads_and_newer_versions_are_refused(tmp_path):
    from transformers_scratch.checkpoints import save_checkpoint
    from transformers_scratch.pretrain import load_encoder_file, _FORMAT
    from transformers_scratch.mlm import MaskedLMTransformer
    torch.manual_seed(0)
    mlm = MaskedLMTransformer(16, 4, 1, 12, 30, fast=True)
    class Old(torch.nn.Module):
        def state_dict(self): return _old_layout(mlm)
    info = dict(config=dict(emb=16, heads=4, depth=1, seq_len=12, dropout=0.), vocab=[str(i) for i in range(30)])
    ck, got = load_encoder_file(save_checkpoint(tmp_path/'old.pt', _FORMAT, Old(), **info))
    x = torch.randint(0, 30, (2, 9))
    assert torch.equal(got.eval()(x), mlm.eval()(x))
    save_checkpoint(tmp_path/'new.pt', _FORMAT, mlm, version=99, **info)
    with pytest.raises(ValueError, match='format version 99') as e: load_encoder_file(tmp_path/'new.pt')
    assert '\n' not in str(e.value)

def test_validators_are_not_named_check():
    "`check_` names an exercise check only; argument validators are `validate_*`"
    from transformers_scratch import models, generate, checkpoints
    assert hasattr(models, 'validate_tokens') and not hasattr(models, 'check_tokens')
    assert hasattr(checkpoints, 'validate_output') and not hasattr(checkpoints, 'check_output')
    assert hasattr(generate, 'validate_sampling_args') and not hasattr(generate, 'check_sampling_args')
