"""The torchvision models tensormem's tools run, with their input shapes.

Every model is built with weights=None (random initialisation, no download):
memory behaviour depends on shapes, not on the values of the weights.

  model, example = build("resnet18", batch=1)        # eval-ready, input tensor
"""

import torch
import torchvision

# name -> (constructor, default input resolution)
_MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), 224),
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), 224),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), 224),
    "mobilenet_v3_large": (
        lambda: torchvision.models.mobilenet_v3_large(weights=None), 224),
    "efficientnet_b0": (
        lambda: torchvision.models.efficientnet_b0(weights=None), 224),
    "inception_v3": (
        lambda: torchvision.models.inception_v3(weights=None, aux_logits=False,
                                                init_weights=False), 299),
    "deeplabv3_mobilenet_v3": (
        lambda: torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None, aux_loss=False), 224),
    "vit_b_16": (lambda: torchvision.models.vit_b_16(weights=None), 224),
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(weights=None), 224),
}


def names():
    return list(_MODELS)


# Training resolutions below the model's own, to keep recordings quick on a
# 2-core CPU (activation memory scales with the pixel count).
_TRAINING_RESOLUTIONS = {"resnet50": 160, "inception_v3": 160, "deeplabv3_mobilenet_v3": 160}


def default_resolution(name):
    return _MODELS[name][1]


def training_resolution(name):
    return _TRAINING_RESOLUTIONS.get(name, default_resolution(name))


def build(name, batch=1, resolution=None, seed=0):
    """Returns (model, example input) with deterministic weights and input.

    Raises ValueError for an unknown name or a resolution the model rejects.
    """
    if name not in _MODELS:
        raise ValueError(f"unknown model '{name}'; known: {', '.join(_MODELS)}")
    constructor, own_resolution = _MODELS[name]
    if name == "vit_b_16" and resolution not in (None, own_resolution):
        raise ValueError("vit_b_16 takes only 224x224 inputs")
    size = resolution or own_resolution
    if batch < 1 or size < 32:
        raise ValueError(f"batch {batch} and resolution {size} must be >= 1 and >= 32")
    torch.manual_seed(seed)
    model = constructor()
    example = torch.randn(batch, 3, size, size)
    return model, example


def output_tensor(result):
    """The main output tensor of a model call (segmentation models return a dict)."""
    if isinstance(result, dict):
        return result["out"]
    return result
