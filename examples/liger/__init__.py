"""Liger-Kernel's Triton ops written in tilejit's own front end (``import tilejit as tile``), one
module per op, each a ``torch.autograd.Function`` named and called as Liger's (the same
arguments, outputs and gradients), a functional wrapper, and where Liger has one an
``nn.Module``. Run a module as a script to check it against torch (``python
examples/liger/rms_norm.py``); ``benchmarks/liger.py`` times each against Liger's Triton kernels.

Norms and softmax:

* `rms_norm.py`: ``LigerRMSNormFunction`` (offset, llama/gemma/none casting, in-place dX)
* `layer_norm.py`: ``LigerLayerNormFunction``
* `group_norm.py`: ``LigerGroupNormFunction``
* `dyt.py`: ``LigerDyTFunction`` (Dynamic Tanh)
* `softmax.py`: ``LigerSoftmaxFunction``

Activations, positions and losses:

* `swiglu.py`: ``LigerSiLUMulFunction``
* `geglu.py`: ``LigerGELUMulFunction``
* `rope.py`: ``LigerRopeFunction``
* `cross_entropy.py`: ``LigerCrossEntropyFunction``
* `fused_linear_cross_entropy.py`: ``LigerFusedLinearCrossEntropyFunction``
* `kl_div.py`: ``LigerKLDivLossFunction``
* `jsd.py`: ``LigerJSDFunction``

This package imports none of them: ``import examples.liger.rms_norm`` (with the repository root
on ``sys.path``) loads one.
"""
