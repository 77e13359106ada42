"""Neural style transfer, written the way PyTorch's tutorial "Neural Transfer Using PyTorch"
(Gatys et al.) writes it.

A small frozen feature net (Conv2d/ReLU/MaxPool2d, weights from NumPy in place of VGG-19's) is
walked with `children()` and rebuilt as an `nn.Sequential` (`add_module`) with a Normalization
module in front (mean and std as `tensor.view(-1, 1, 1)`), the in-place ReLUs replaced by
out-of-place ones, and ContentLoss and StyleLoss modules inserted after chosen convolutions:
each stores its `detach()`ed target (a Gram matrix from `view` and `mm` for style), computes its
`F.mse_loss` in `forward` and returns its input unchanged. The net is trimmed after the last loss
module, put in `eval()` with `requires_grad_(False)`, and the input image itself is the only
parameter: `input_img.requires_grad_(True)`, `optim.LBFGS([input_img])` driven by a closure that
first clamps the image into [0, 1] under `torch.no_grad()`, with the tutorial's
`while run[0] <= num_steps` loop around `optimizer.step(closure)`. The style and content images
are synthetic (stripes and a blob).
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
import tensorplug.optim as optim


class ContentLoss(nn.Module):

    def __init__(self, target,):
        super(ContentLoss, self).__init__()
        # we 'detach' the target content from the tree used to dynamically compute the gradient
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


def gram_matrix(input):
    a, b, c, d = input.size()  # a=batch size, b=number of feature maps, (c,d)=dimensions of a f. map
    features = input.view(a * b, c * d)
    G = torch.mm(features, features.t())
    # 'normalize' the values of the gram matrix by dividing by the number of elements in each map
    return G.div(a * b * c * d)


class StyleLoss(nn.Module):

    def __init__(self, target_feature):
        super(StyleLoss, self).__init__()
        self.target = gram_matrix(target_feature).detach()

    def forward(self, input):
        G = gram_matrix(input)
        self.loss = F.mse_loss(G, self.target)
        return input


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super(Normalization, self).__init__()
        # .view the mean and std to make them [C x 1 x 1] so that they can directly work with
        # image Tensor of shape [B x C x H x W].
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std


def feature_net(width=8):
    """A VGG-like stack standing in for the pretrained VGG-19 features."""
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(width, width, 3, padding=1), nn.ReLU(inplace=True),
        nn.MaxPool2d(2, 2),
        nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(2 * width, 2 * width, 3, padding=1), nn.ReLU(inplace=True),
        nn.MaxPool2d(2, 2),
        nn.Conv2d(2 * width, 2 * width, 3, padding=1), nn.ReLU(inplace=True),
    )


def get_style_model_and_losses(cnn, normalization_mean, normalization_std, style_img, content_img,
                               content_layers, style_layers):
    normalization = Normalization(normalization_mean, normalization_std).to(style_img.device)
    content_losses = []
    style_losses = []
    model = nn.Sequential(normalization)

    i = 0  # increment every time we see a conv
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = 'conv_{}'.format(i)
        elif isinstance(layer, nn.ReLU):
            name = 'relu_{}'.format(i)
            # The in-place version doesn't play very nicely with the ContentLoss and StyleLoss we
            # insert below. So we replace with out-of-place ones here.
            layer = nn.ReLU(inplace=False)
        elif isinstance(layer, nn.MaxPool2d):
            name = 'pool_{}'.format(i)
        else:
            raise RuntimeError('Unrecognized layer: {}'.format(layer.__class__.__name__))

        model.add_module(name, layer)

        if name in content_layers:
            target = model(content_img).detach()
            content_loss = ContentLoss(target)
            model.add_module("content_loss_{}".format(i), content_loss)
            content_losses.append(content_loss)

        if name in style_layers:
            target_feature = model(style_img).detach()
            style_loss = StyleLoss(target_feature)
            model.add_module("style_loss_{}".format(i), style_loss)
            style_losses.append(style_loss)

    # now we trim off the layers after the last content and style losses
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], ContentLoss) or isinstance(model[i], StyleLoss):
            break
    model = model[:(i + 1)]
    return model, style_losses, content_losses


def run_style_transfer(cnn, normalization_mean, normalization_std, content_img, style_img, input_img,
                       num_steps, style_weight, content_weight, content_layers, style_layers):
    model, style_losses, content_losses = get_style_model_and_losses(
        cnn, normalization_mean, normalization_std, style_img, content_img, content_layers, style_layers)

    # We want to optimize the input and not the model parameters so we update all the
    # requires_grad fields accordingly
    input_img.requires_grad_(True)
    # We also put the model in evaluation mode, so that specific layers such as dropout or
    # batch normalization layers behave correctly.
    model.eval()
    model.requires_grad_(False)

    optimizer = optim.LBFGS([input_img])
    history = {"losses": [], "style": [], "content": []}

    run = [0]
    while run[0] <= num_steps:

        def closure():
            # correct the values of updated input image
            with torch.no_grad():
                input_img.clamp_(0, 1)

            optimizer.zero_grad()
            model(input_img)
            style_score = 0
            content_score = 0

            for sl in style_losses:
                style_score += sl.loss
            for cl in content_losses:
                content_score += cl.loss

            style_score *= style_weight
            content_score *= content_weight

            loss = style_score + content_score
            loss.backward()

            run[0] += 1
            history["losses"].append(loss.item())
            history["style"].append(style_score.item())
            history["content"].append(content_score.item())
            return style_score + content_score

        optimizer.step(closure)

    # a last correction...
    with torch.no_grad():
        input_img.clamp_(0, 1)

    return input_img, history


def synthetic_images(size):
    """A striped 'style' image and a blob 'content' image in [0, 1], NCHW float32."""
    ys, xs = np.mgrid[0:size, 0:size] / (size - 1)
    style = np.stack([0.5 + 0.5 * np.sin(12 * xs), 0.5 + 0.5 * np.sin(9 * (xs + ys)), 0.5 + 0.5 * np.cos(7 * ys)])
    blob = np.exp(-((xs - 0.4) ** 2 + (ys - 0.6) ** 2) / 0.08)
    content = np.stack([blob, 0.3 + 0.5 * blob * xs, 1.0 - 0.8 * blob])
    return style[None].astype(np.float32), content[None].astype(np.float32)


def init_from_numpy(model, seed):
    """Kaiming-uniform-sized NumPy weights in place of the pretrained ones."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            fan_in = p[0].numel() if p.dim() > 1 else p.numel()
            bound = np.sqrt(3.0 / fan_in) if p.dim() > 1 else 0.1
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def main(argv=None):
    parser = argparse.ArgumentParser(description='neural style transfer with L-BFGS on the input image')
    parser.add_argument('--imsize', type=int, default=16)
    parser.add_argument('--num-steps', type=int, default=15)
    parser.add_argument('--style-weight', type=float, default=1e2)
    parser.add_argument('--content-weight', type=float, default=1.0)
    parser.add_argument('--seed', type=int, default=4)
    parser.add_argument('--device', default=None, help='default: the accelerator if any, else cpu')
    parser.add_argument('--quiet', action='store_true')
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    if args.device is not None:
        device = torch.device(args.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    torch.set_default_device(device)

    style_np, content_np = synthetic_images(args.imsize)
    style_img = torch.from_numpy(style_np).to(device)
    content_img = torch.from_numpy(content_np).to(device)
    assert style_img.size() == content_img.size(), "we need to import style and content images of the same size"

    cnn = feature_net()
    init_from_numpy(cnn, args.seed)
    cnn = cnn.to(device).eval()
    cnn_normalization_mean = [0.485, 0.456, 0.406]
    cnn_normalization_std = [0.229, 0.224, 0.225]

    input_img = content_img.clone()
    output, history = run_style_transfer(
        cnn, cnn_normalization_mean, cnn_normalization_std, content_img, style_img, input_img,
        num_steps=args.num_steps, style_weight=args.style_weight, content_weight=args.content_weight,
        content_layers=['conv_4'], style_layers=['conv_1', 'conv_2', 'conv_3', 'conv_4', 'conv_5'])
    torch.set_default_device(None)

    history["image"] = [output.min().item(), output.max().item(), output.mean().item(),
                        (output - content_img).abs().mean().item()]
    if not args.quiet:
        print('run {}: Style Loss : {:4f} Content Loss: {:4f}'.format(
            len(history["losses"]), history["style"][-1], history["content"][-1]))
    return history


if __name__ == '__main__':
    print(json.dumps(main()))
