"""RemovableHandle for hooks kept in ordered dicts (torch.utils.hooks's).

Module forward hooks, optimizer step hooks and state_dict hooks live in
OrderedDicts keyed by a handle id; the handle removes its entry (and the
entries in any extra dicts, e.g. "this hook takes kwargs") again.
"""
import weakref
from collections import OrderedDict


class RemovableHandle:
    """A handle that removes a hook from its dict(s): handle.remove(), or
    use it as a context manager."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if extra_dict is None:
            extra_dict = ()
        elif isinstance(extra_dict, (dict, OrderedDict)):
            extra_dict = (extra_dict,)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self):
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra = ref()
            if extra is not None and self.id in extra:
                del extra[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def __repr__(self):
        return "<RemovableHandle id=%d>" % self.id


class ListHookHandle:
    """What Tensor.register_hook and Node.register_(pre)hook return: .remove()
    takes the hook out of its list again (those hooks run in a plain list)."""

    __slots__ = ("_hooks", "_hook")

    def __init__(self, hooks, hook):
        self._hooks = hooks
        self._hook = hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
