from __future__ import annotations

import sys
import textwrap

import pytest

from ding_lite.registry import POLICY_REGISTRY, Registry, import_names


def test_register_as_decorator_and_call_then_get_build():
    registry = Registry('thing')

    @registry.register('a')
    class A:
        def __init__(self, x):
            self.x = x

    registry.register('b', dict)
    assert registry.get('a') is A
    assert registry.build('a', 3).x == 3
    assert registry.keys() == ['a', 'b']
    assert 'a' in registry and 'c' not in registry


def test_duplicate_name_rejected_unless_forced():
    registry = Registry('thing')
    registry.register('a', int)
    with pytest.raises(KeyError, match="already registered"):
        registry.register('a', float)
    registry.register('a', float, force_overwrite=True)
    assert registry.get('a') is float
    registry.register('a', float)  # re-registering the same object (module re-import) is harmless


def test_unknown_name_lists_registered_and_closest():
    registry = Registry('policy')
    for name in ('sac', 'discrete_sac', 'sqil_sac'):
        registry.register(name, object)
    with pytest.raises(KeyError) as info:
        registry.get('sacc')
    message = str(info.value)
    assert "unknown policy 'sacc'" in message
    assert "did you mean 'sac'?" in message
    assert 'registered: discrete_sac, sac, sqil_sac' in message


def test_import_names_registers_user_plugin(tmp_path, monkeypatch):
    (tmp_path / 'my_plugin_mod.py').write_text(textwrap.dedent('''
        from ding_lite.registry import POLICY_REGISTRY
        @POLICY_REGISTRY.register('my_plugin_policy_x')
        class MyPolicy:
            pass
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert 'my_plugin_policy_x' not in POLICY_REGISTRY
    import_names(['my_plugin_mod'])
    try:
        assert POLICY_REGISTRY.get('my_plugin_policy_x').__name__ == 'MyPolicy'
    finally:
        POLICY_REGISTRY._table.pop('my_plugin_policy_x')
        sys.modules.pop('my_plugin_mod')


def test_import_names_missing_module_is_clear():
    with pytest.raises(ImportError, match="'no_such_module_xyz' listed in import_names"):
        import_names(['no_such_module_xyz'])


def test_entry_point_plugins_loaded_lazily_once(monkeypatch):
    import ding_lite.registry as reg
    loaded = []

    class FakeEntry:
        def load(self):
            loaded.append(1)
            reg.MODEL_REGISTRY.register('from_entry_point_y', object, force_overwrite=True)

    monkeypatch.setattr(reg, '_plugins_loaded', False)
    monkeypatch.setattr('importlib.metadata.entry_points', lambda group: [FakeEntry()] if group == reg.PLUGIN_GROUP else [])
    try:
        assert reg.MODEL_REGISTRY.get('from_entry_point_y') is object
        with pytest.raises(KeyError):
            reg.MODEL_REGISTRY.get('still_missing')
        assert loaded == [1]
    finally:
        reg.MODEL_REGISTRY._table.pop('from_entry_point_y', None)


def test_registry_without_a_kind_as_di_engine():
    registry = Registry()
    registry.register('a')(int)
    assert registry.get('a') is int and registry['a'] is int and registry.query() == ['a']
    with pytest.raises(KeyError, match="unknown entry 'b'"):
        registry.get('b')


def test_sac_discrete_is_an_alias_of_discrete_sac():
    from policy_zoo import DiscreteSACPolicy
    assert POLICY_REGISTRY.get('sac_discrete') is DiscreteSACPolicy


def test_a_class_defined_again_re_registers_but_another_one_under_its_name_does_not():
    registry = Registry('thing')

    def define():
        class Thing:
            pass
        return Thing

    first, again = define(), define()
    registry.register('thing', first)
    registry.register('thing', again)  # the same definition run twice (a script imported, a notebook cell)
    assert registry.get('thing') is again

    class Other:
        pass

    with pytest.raises(KeyError, match="thing 'thing' is already registered"):
        registry.register('thing', Other)
