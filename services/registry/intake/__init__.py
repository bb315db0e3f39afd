"""Model intake: what the registry checks in an upload before anything is stored.

- `checks.py`: the entry (`check_upload`): the ONNX checker, the validation set (`.npz` read within
  bounds, targets per task), the outputs moved scores first, the smoke test on two validation rows;
- `pytorch.py`: PyTorch archives (TorchScript, torch.export): scanned without unpickling, loaded, the
  inputs and outputs read from the program, converted to ONNX where the exporter can (imports torch:
  loaded only for PyTorch uploads);
- `batch_axis.py`: a batch size fixed in an uploaded graph, made dynamic where the graph allows;
- `zipmap.py`: a classifier's `skl2onnx` ZipMap output served as the probabilities tensor it wraps.
"""
