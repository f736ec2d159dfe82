"""Building blocks: MLP trunks, a batched critic ensemble and the Gaussian head."""
from __future__ import annotations

import inspect
import math
from typing import Any

import torch
import torch.nn.functional as F
from easydict import EasyDict
from torch import Tensor, nn

ACTIVATIONS = {'relu': nn.ReLU, 'tanh': nn.Tanh, 'elu': nn.ELU, 'gelu': nn.GELU, 'silu': nn.SiLU,
               'leaky_relu': nn.LeakyReLU}


def get_activation(activation: str | nn.Module) -> nn.Module:
    if isinstance(activation, nn.Module):
        return activation
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; expected one of {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[activation]()


def signature_config(cls: type) -> EasyDict:
    """A model's default config: its constructor's keyword defaults (required arguments map to None)."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return EasyDict({p.name: None if p.default is inspect.Parameter.empty else p.default
                     for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)})


def mlp(in_size: int, hidden_size: int, layer_num: int, activation: str | nn.Module,
        batch_renorm: dict | None = None) -> nn.Sequential:
    """``Linear(in, hidden)`` + activation, then ``layer_num`` more hidden layers (DI-engine's encoder + head trunk).
    With ``batch_renorm`` (``BatchRenorm``'s keywords), a BatchRenorm before every Linear and after the last
    activation (CrossQ's layout: what follows, a head, reads normalised features too)."""
    layers: list[nn.Module] = []
    for index in range(layer_num + 1):
        size = in_size if index == 0 else hidden_size
        layers += [*_renorm(size, None, batch_renorm), nn.Linear(size, hidden_size), get_activation(activation)]
    layers += _renorm(hidden_size, None, batch_renorm)
    return nn.Sequential(*layers)


def _renorm(size: int, ensemble_size: int | None, batch_renorm: dict | None) -> list[nn.Module]:
    """``[BatchRenorm(size)]`` with the keywords ``batch_renorm``, or nothing where it is None."""
    return [BatchRenorm(size, ensemble_size, **batch_renorm)] if batch_renorm is not None else []


class BatchRenorm(nn.Module):
    """Batch Renormalization (arXiv:1702.03275) of ``[B, H]`` features, or ``[E, B, H]`` with ``ensemble_size``
    (each member its own statistics and affine), normalised over the batch axis.

    In training mode: ``(x - mu_B) / sigma_B * r + d``, with ``r = clip(sigma_B / sigma, 1/r_max, r_max)`` and
    ``d = clip((mu_B - mu) / sigma, -d_max, d_max)`` as constants, against the running ``mu``, ``sigma``; for the
    first ``warmup_steps`` training batches ``r = 1, d = 0`` (plain batch norm). Every training batch moves the
    running statistics by ``momentum`` (torch's convention: the new batch's weight) and counts a step. In eval
    mode: ``(x - mu) / sigma``. As the original and the CrossQ authors' code, the variance is the biased one
    (SB3-contrib's layer uses the unbiased one); ``sigma = sqrt(var + eps)``. The statistics and the step counter
    are buffers: in every checkpoint.
    """

    def __init__(self, features: int, ensemble_size: int | None = None, momentum: float = 0.01, eps: float = 1e-3,
                 warmup_steps: int = 100_000, r_max: float = 3.0, d_max: float = 5.0) -> None:
        super().__init__()
        shape = (1, features) if ensemble_size is None else (ensemble_size, 1, features)
        self.momentum, self.eps, self.warmup_steps, self.r_max, self.d_max = momentum, eps, warmup_steps, r_max, d_max
        self.weight, self.bias = nn.Parameter(torch.ones(shape)), nn.Parameter(torch.zeros(shape))
        self.register_buffer('running_mean', torch.zeros(shape))
        self.register_buffer('running_var', torch.ones(shape))
        self.register_buffer('steps', torch.zeros((), dtype=torch.long))  # training batches seen

    def forward(self, x: Tensor) -> Tensor:
        # as x * scale + shift (one fused pass over the batch; the per-feature algebra is on [(E,) 1, H])
        if not self.training:
            scale = self.weight * torch.rsqrt(self.running_var + self.eps)
            return torch.addcmul(self.bias - self.running_mean * scale, x, scale)
        mean = x.mean(-2, keepdim=True)
        centred = x - mean
        var = centred.square().mean(-2, keepdim=True)            # var_mean over a middle axis is ~10x slower
        std = (var + self.eps).sqrt()
        with torch.no_grad():  # r and d are constants of the graph; no branch on the counter: no host sync
            running_std = (self.running_var + self.eps).sqrt()
            renorm = self.steps >= self.warmup_steps
            r = torch.where(renorm, (std / running_std).clamp(1 / self.r_max, self.r_max), 1.0)
            d = torch.where(renorm, ((mean - self.running_mean) / running_std).clamp(-self.d_max, self.d_max), 0.0)
            self.running_mean.add_((mean - self.running_mean) * self.momentum)
            self.running_var.add_((var - self.running_var) * self.momentum)
            self.steps.add_(1)
        return torch.addcmul(self.bias + self.weight * d, centred, self.weight * r / std)


class EnsembleLinear(nn.Module):
    """``E`` independent linear layers applied in one batched matmul: ``[B|E, B, in] -> [E, B, out]``."""

    def __init__(self, ensemble_size: int, in_features: int, out_features: int) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)  # nn.Linear's default init, per member
        self.weight = nn.Parameter(torch.empty(ensemble_size, in_features, out_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(ensemble_size, 1, out_features).uniform_(-bound, bound))

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() == 2:  # shared input: broadcast without copying
            x = x.unsqueeze(0).expand(self.weight.shape[0], -1, -1)
        if self.weight.shape[-1] == 1 and x.is_cpu:  # one output (a critic's head): bmm's CPU matvec is ~3x slower
            return (x * self.weight.transpose(1, 2)).sum(-1, keepdim=True) + self.bias
        return torch.baddbmm(self.bias, x, self.weight)


INITIALISERS = ('default', 'xavier', 'orthogonal')


def initialise(model: nn.Module, scheme: str) -> nn.Module:
    """``model.init`` (Coach's and ALF's choice): every Linear, Conv and ``EnsembleLinear`` member's weight
    Xavier-uniform or orthogonal (gain 1) and its bias zero; ``'default'`` keeps PyTorch's init. Recurrent cells and
    normalisation layers keep theirs."""
    if scheme not in INITIALISERS:
        raise ValueError(f"policy.model.init={scheme!r}: expected one of {', '.join(INITIALISERS)}")
    if scheme == 'default':
        return model
    fill = nn.init.xavier_uniform_ if scheme == 'xavier' else nn.init.orthogonal_
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Conv1d, nn.Conv2d)):
                fill(module.weight)
            elif isinstance(module, EnsembleLinear):
                for member in module.weight:
                    fill(member)
            else:
                continue
            if module.bias is not None:
                module.bias.zero_()
    return model


class EnsembleLayerNorm(nn.Module):
    """LayerNorm over the features of ``[E, B, H]`` with each member's own scale and shift."""

    def __init__(self, ensemble_size: int, features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(ensemble_size, 1, features))
        self.bias = nn.Parameter(torch.zeros(ensemble_size, 1, features))

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, x.shape[-1:], eps=self.eps) * self.weight + self.bias


def ensemble_mlp(ensemble_size: int, in_size: int, hidden_size: int, layer_num: int, out_size: int,
                 activation: str | nn.Module, dropout: float = 0.0, layer_norm: bool = False,
                 batch_renorm: dict | None = None) -> nn.Sequential:
    """``ensemble_size`` MLPs of identical shape evaluated together; output ``[E, B, out]``. Each hidden block is
    Linear, then Dropout (``dropout`` > 0), then LayerNorm (``layer_norm``), then the activation (DroQ's order).
    With ``batch_renorm`` (``BatchRenorm``'s keywords), a BatchRenorm before every Linear (CrossQ's critic)."""
    layers: list[nn.Module] = []
    for index in range(layer_num + 1):
        size = in_size if index == 0 else hidden_size
        layers += [*_renorm(size, ensemble_size, batch_renorm), EnsembleLinear(ensemble_size, size, hidden_size)]
        layers += [nn.Dropout(dropout)] if dropout > 0 else []
        layers += [EnsembleLayerNorm(ensemble_size, hidden_size)] if layer_norm else []
        layers.append(get_activation(activation))
    layers += [*_renorm(hidden_size, ensemble_size, batch_renorm), EnsembleLinear(ensemble_size, hidden_size, out_size)]
    return nn.Sequential(*layers)


class FCEncoder(nn.Module):
    """Vector observations -> features: a ``Linear`` + activation per entry of ``hidden_size_list``."""

    def __init__(self, in_size: int, hidden_size_list: list[int], activation: str | nn.Module) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for size in hidden_size_list:
            layers += [nn.Linear(in_size, size), get_activation(activation)]
            in_size = size
        self.main = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return self.main(x)


class ConvEncoder(nn.Module):
    """Images ``[C, H, W]`` -> features: a conv layer per entry of ``hidden_size_list`` but the last, flattened, then
    a ``Linear`` to the last entry. Kernels and strides are DI-engine's ConvEncoder defaults (8, 4, 3 and 4, 2, 1;
    a fourth layer on repeats the last) unless given; an image too small for those gets 3x3 kernels of stride 1
    (then 1x1 where it has shrunk to a pixel), so any image of at least 1x1 fits. Integer (uint8) pixels are scaled
    to [0, 1] here, so buffers keep them as uint8."""

    def __init__(self, obs_shape: list[int], hidden_size_list: list[int], activation: str | nn.Module,
                 kernel_size: list[int] | None = None, stride: list[int] | None = None) -> None:
        super().__init__()
        if len(hidden_size_list) < 2:
            raise ValueError(f"encoder_hidden_size_list for images needs conv channels and a feature size, e.g. "
                             f"[32, 64, 64, 128]; got {hidden_size_list}")
        n = len(hidden_size_list) - 1
        kernels, strides = _per_layer(kernel_size, [8, 4, 3], n, 'kernel_size'), _per_layer(stride, [4, 2, 1], n,
                                                                                             'stride')
        if kernel_size is None and stride is None and not _fits(min(obs_shape[1:]), kernels, strides):
            kernels, strides = _small_image_layers(min(obs_shape[1:]), n)
        layers: list[nn.Module] = []
        channels = obs_shape[0]
        for out_channels, kernel, step in zip(hidden_size_list[:-1], kernels, strides):
            layers += [nn.Conv2d(channels, out_channels, kernel, step), get_activation(activation)]
            channels = out_channels
        self.conv = nn.Sequential(*layers, nn.Flatten())
        with torch.no_grad():
            try:
                flat = self.conv(torch.zeros(1, *obs_shape)).shape[1]
            except RuntimeError:
                raise ValueError(_too_small(obs_shape, kernels, strides)) from None
        self.out = nn.Sequential(nn.Linear(flat, hidden_size_list[-1]), get_activation(activation))

    def forward(self, x: Tensor) -> Tensor:
        if not x.is_floating_point():
            x = x.float().div(255.0)
        return self.out(self.conv(x))


class MultiInputEncoder(nn.Module):
    """Dict observations ``{key: image [C, H, W] or vector}`` -> features: a ``ConvEncoder`` per image key, the
    vector keys concatenated beside their features (SB3's ``CombinedExtractor``). ``out_size``: the feature size."""

    def __init__(self, obs_shape: dict[str, list[int] | int], hidden_size_list: list[int],
                 activation: str | nn.Module, kernel_size: list[int] | None = None,
                 stride: list[int] | None = None) -> None:
        super().__init__()
        shapes = {key: [int(s) for s in shape] if isinstance(shape, (list, tuple)) else [int(shape)]
                  for key, shape in obs_shape.items()}
        self.image_keys = [key for key, shape in shapes.items() if len(shape) == 3]
        self.vector_keys = [key for key, shape in shapes.items() if len(shape) != 3]
        if not self.image_keys:
            raise ValueError(f"a Dict obs_shape needs an image key ([C, H, W]); got {obs_shape} (vectors alone are "
                             f"flattened into one obs_shape)")
        self.convs = nn.ModuleList(ConvEncoder(shapes[key], hidden_size_list, activation, kernel_size, stride)
                                   for key in self.image_keys)
        self.out_size = len(self.image_keys) * hidden_size_list[-1] + \
            sum(math.prod(shapes[key]) for key in self.vector_keys)

    def forward(self, obs: Any) -> Tensor:
        features = [conv(obs[key]) for key, conv in zip(self.image_keys, self.convs)]
        features += [obs[key].flatten(1).float() for key in self.vector_keys]
        return torch.cat(features, dim=-1)


def _per_layer(given: list[int] | int | None, default: list[int], n: int, name: str) -> list[int]:
    """One ``name`` per conv layer: ``given`` (an int for all), else ``default`` with its last entry repeated."""
    if given is None:
        return [default[min(i, len(default) - 1)] for i in range(n)]
    values = [int(given)] * n if isinstance(given, int) else [int(v) for v in given]
    if len(values) != n or min(values) < 1:
        raise ValueError(f"encoder_{name}={given!r}: expected {n} positive ints, one per conv layer "
                         f"(encoder_hidden_size_list has {n} conv channels and a feature size)")
    return values


def _fits(side: int, kernels: list[int], strides: list[int]) -> bool:
    for kernel, step in zip(kernels, strides):
        if side < kernel:
            return False
        side = (side - kernel) // step + 1
    return True


def _small_image_layers(side: int, n: int) -> tuple[list[int], list[int]]:
    """Kernels and strides for an image too small for DI-engine's defaults: 3x3 kernels of stride 1 while the side
    allows (each takes 2 pixels off it), then 1x1."""
    kernels = []
    for _ in range(n):
        kernels.append(min(3, side))
        side -= kernels[-1] - 1
    return kernels, [1] * n


def _too_small(obs_shape: list[int], kernels: list[int], strides: list[int]) -> str:
    """Why images of ``obs_shape`` do not fit these conv layers, and settings that do."""
    side, n = min(obs_shape[1:]), len(kernels)
    fits = max(1, min(n, (side - 1) // 2))  # kernel 3, stride 1: each layer takes 2 pixels off a side
    if fits == n:
        advice = f"policy.model.encoder_kernel_size={[3] * n} and encoder_stride={[1] * n}"
    else:
        advice = (f"{fits} conv layer{'s' * (fits > 1)} (encoder_hidden_size_list with {fits} channel entries and a "
                  f"feature size, e.g. {[32] * fits + [128]}) with encoder_kernel_size={[3] * fits} and "
                  f"encoder_stride={[1] * fits}")
    return (f"images of shape {list(obs_shape)} are too small for {n} conv layers with kernels {kernels} and strides "
            f"{strides}: set {advice}, which fit a {obs_shape[1]}x{obs_shape[2]} image")


class ReparameterizationHead(nn.Module):
    """State-conditioned Gaussian: returns ``(mu, sigma)`` with log-sigma clamped to ``[log_sigma_min, max]``."""

    def __init__(self, hidden_size: int, output_size: int, log_sigma_min: float = -20.0,
                 log_sigma_max: float = 2.0) -> None:
        super().__init__()
        self.mu = nn.Linear(hidden_size, output_size)
        self.log_sigma = nn.Linear(hidden_size, output_size)
        self.log_sigma_min, self.log_sigma_max = log_sigma_min, log_sigma_max

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        log_sigma = self.log_sigma(x).clamp(self.log_sigma_min, self.log_sigma_max)
        return self.mu(x), log_sigma.exp()
