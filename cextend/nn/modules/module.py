"""Legacy import path, as torch's `torch.nn.modules.module`: Module and the
global module hooks (register_module_forward_hook and kin). Any other name
(the global hook dicts, `_global_is_full_backward_hook`) is read live from
cextend.nn.module, where they are kept."""
from cextend.nn import module as _impl
from cextend.nn.module import (Module, register_module_backward_hook,  # noqa: F401
                               register_module_buffer_registration_hook, register_module_forward_hook,
                               register_module_forward_pre_hook, register_module_full_backward_hook,
                               register_module_full_backward_pre_hook, register_module_module_registration_hook,
                               register_module_parameter_registration_hook)


def __getattr__(name):
    try:
        return getattr(_impl, name)
    except AttributeError:
        raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name)) from None
