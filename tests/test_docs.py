"""The documentation cannot drift: every Python block a user would paste runs (page by page, as a reader goes top
down, training budgets capped), the site builds with ``mkdocs build --strict`` (a broken link or reference fails),
and its front page is the README's."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

CAP = 1000  # env steps a documented training call runs here: the warm-up and one evaluation, whatever it asks
PRELUDE = f'''
import entry

def _capped(pipeline):
    def run(*args, **kwargs):
        kwargs['max_env_step'] = min(kwargs.get('max_env_step') or {CAP}, {CAP})
        return pipeline(*args, **kwargs)
    return run

for _name in ('serial_pipeline', 'serial_pipeline_sqil', 'parallel_pipeline'):
    setattr(entry, _name, _capped(getattr(entry, _name)))
'''
# docs/index.md is the README with its links made relative to docs/ (tested below), so its blocks run once
PAGES = ['README.md'] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, 'docs', '*.md'))
                               if not p.endswith('index.md'))


def python_blocks(path: str) -> list[str]:
    return re.findall(r'^```python\n(.*?)^```', open(os.path.join(ROOT, path)).read(), flags=re.S | re.M)


@pytest.mark.parametrize('page', [p for p in PAGES if python_blocks(p)])
def test_every_python_block_of_a_page_runs(page, tmp_path):
    for name in ('dizoo_configs', 'docs'):  # the paths the blocks name, from where a user stands in a clone
        os.symlink(os.path.join(ROOT, name), tmp_path / name)
    scripts, blocks = [], []
    for block in python_blocks(page):  # a block headed '# name.py' is a file the user saves and runs as a script
        named = re.match(r'# (\w+\.py)\n', block)
        if named:
            (tmp_path / named[1]).write_text(block)
            scripts.append(named[1])
        else:
            blocks.append(block)
    (tmp_path / 'page.py').write_text('\n'.join(f"\n# --- block {k} of {page}\n{b}" for k, b in enumerate(blocks)))
    (tmp_path / 'capped' ).mkdir()
    (tmp_path / 'capped' / 'sitecustomize.py').write_text(PRELUDE)  # Python runs it first, in every process
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / 'capped'), ROOT]), MPLBACKEND='Agg')
    for script in [*scripts, 'page.py']:
        run = subprocess.run([sys.executable, '-W', 'ignore', script], cwd=tmp_path, capture_output=True,
                             text=True, timeout=300, env=env)
        assert run.returncode == 0, f"{page} ({script}): {run.stderr[-3000:]}"


def test_the_sites_front_page_is_the_readme():
    readme = open(os.path.join(ROOT, 'README.md')).read().replace('](docs/', '](')
    readme = readme.replace("The documentation is a MkDocs site built from `docs/` (`make docs` writes it to `site/`; "
                            "its pages read as they are\non GitHub too):",
                            "This site is built from the repository's `docs/` (`make docs` writes it to `site/`):")
    assert open(os.path.join(ROOT, 'docs', 'index.md')).read() == readme


def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip('mkdocstrings', reason="the docs site needs pip install 'ding-lite[docs]'")
    run = subprocess.run([sys.executable, '-m', 'mkdocs', 'build', '--strict', '-d', str(tmp_path / 'site')],
                         cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, NO_MKDOCS_2_WARNING='1'))
    assert run.returncode == 0, run.stderr[-3000:]
    reference = (tmp_path / 'site' / 'reference' / 'index.html').read_text()
    assert "Train the config's policy serially" in reference and 'policy_zoo.sac.SACPolicy' in reference
