"""One step of a model's inference or training, as the recording and timing tools run it.

    step = make_step("resnet18", mode="train", batch=8, resolution=224)
    loss = step()      # forward + backward + SGD step (with momentum)

Inference runs under torch.no_grad() in eval mode. Training runs a forward pass in
train mode, a cross-entropy loss against fixed random labels (per pixel for
segmentation models), backward, and an SGD step with momentum 0.9. Everything is
seeded, so two runs in one thread compute bit-identical values.

The language models (language_models.py: transformer, transformer_varlen) take no
resolution: each step draws a token batch of its sequence length (listed in
step.sequence_lengths); training is next-token cross-entropy, backward, gradient
clipping at norm 1 and an AdamW step; inference returns the logits.
"""

import torch

import language_models
import models

MODES = ("infer", "train")


def make_step(name, mode, batch, resolution=None, seed=0, keep_output=False):
    """Builds the model (allocating its weights now) and returns a callable step.

    keep_output: a training step returns (loss, output) instead of the loss."""
    if mode not in MODES:
        raise ValueError(f"unknown mode '{mode}'; known: {', '.join(MODES)}")
    if name in language_models.names():
        if resolution is not None:
            raise ValueError(f"{name} takes no resolution")
        return _language_step(name, mode, batch, seed, keep_output)
    model, example = models.build(name, batch, resolution, seed=seed)
    if mode == "infer":
        model.eval()

        def infer():
            with torch.no_grad():
                return models.output_tensor(model(example))

        infer.model = model
        return infer

    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    labels = {}

    def train():
        optimizer.zero_grad(set_to_none=True)
        output = models.output_tensor(model(example))
        if "target" not in labels:  # shaped like the output, drawn once
            generator = torch.Generator().manual_seed(seed + 1)
            shape = (output.shape[0],) + tuple(output.shape[2:])
            labels["target"] = torch.randint(0, output.shape[1], shape, generator=generator)
        loss = torch.nn.functional.cross_entropy(output, labels["target"])
        loss.backward()
        optimizer.step()
        return (loss.detach(), output.detach()) if keep_output else loss.detach()

    train.model = model
    return train


def _language_step(name, mode, batch, seed, keep_output):
    model = language_models.build(name, seed=seed)
    batches = language_models.SequenceLengths(name, seed=seed)
    if mode == "infer":
        model.eval()

        def infer():
            tokens = batches.batch(batch)
            with torch.no_grad():
                return model(tokens[:, :-1])

        step = infer
    else:
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def train():
            optimizer.zero_grad(set_to_none=True)
            tokens = batches.batch(batch)
            logits = model(tokens[:, :-1])
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            return (loss.detach(), logits.detach()) if keep_output else loss.detach()

        step = train
    step.model = model
    step.sequence_lengths = batches.lengths
    return step
