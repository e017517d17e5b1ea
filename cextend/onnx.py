"""torch.onnx: importable, so scripts that import it run; exporting is not supported."""


class OnnxExporterError(RuntimeError):
    pass


def export(model=None, args=(), f=None, *rest, **options):
    raise NotImplementedError("cextend.onnx.export: exporting to ONNX is not supported by cextend (it has no "
                              "graph tracer); load the weights into a PyTorch model and export from there")


def is_in_onnx_export():
    return False
