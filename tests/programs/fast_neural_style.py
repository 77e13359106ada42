"""Style transfer training, as pytorch/examples' fast_neural_style/neural_style trains it.

The example's TransformerNet, narrowed: reflection-padded convolutions, affine InstanceNorm2d,
residual blocks and nearest-neighbour upsampling (F.interpolate). A frozen convolutional feature
network stands in for VGG16 and returns its activations as a namedtuple; the loss is the content
term (mse_loss of features) plus the style term (mse_loss of Gram matrices made with bmm), with
the batch normalised by the ImageNet mean and std built with new_tensor. The images are
synthetic: NumPy-drawn smooth colour fields in [0, 255].
"""
import argparse
import json
from collections import namedtuple

import numpy as np

import tensorplug as torch
from tensorplug.optim import Adam
from tensorplug.utils.data import DataLoader, TensorDataset


class TransformerNet(torch.nn.Module):
    def __init__(self):
        super(TransformerNet, self).__init__()
        # Initial convolution layers
        self.conv1 = ConvLayer(3, 8, kernel_size=9, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(8, affine=True)
        self.conv2 = ConvLayer(8, 16, kernel_size=3, stride=2)
        self.in2 = torch.nn.InstanceNorm2d(16, affine=True)
        self.conv3 = ConvLayer(16, 32, kernel_size=3, stride=2)
        self.in3 = torch.nn.InstanceNorm2d(32, affine=True)
        # Residual layers
        self.res1 = ResidualBlock(32)
        self.res2 = ResidualBlock(32)
        # Upsampling Layers
        self.deconv1 = UpsampleConvLayer(32, 16, kernel_size=3, stride=1, upsample=2)
        self.in4 = torch.nn.InstanceNorm2d(16, affine=True)
        self.deconv2 = UpsampleConvLayer(16, 8, kernel_size=3, stride=1, upsample=2)
        self.in5 = torch.nn.InstanceNorm2d(8, affine=True)
        self.deconv3 = ConvLayer(8, 3, kernel_size=9, stride=1)
        # Non-linearities
        self.relu = torch.nn.ReLU()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.relu(self.in3(self.conv3(y)))
        y = self.res1(y)
        y = self.res2(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.relu(self.in5(self.deconv2(y)))
        y = self.deconv3(y)
        return y


class ConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super(ConvLayer, self).__init__()
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        out = self.reflection_pad(x)
        out = self.conv2d(out)
        return out


class ResidualBlock(torch.nn.Module):
    """ResidualBlock
    introduced in: https://arxiv.org/abs/1512.03385
    recommended architecture: http://torch.ch/blog/2016/02/04/resnets.html
    """

    def __init__(self, channels):
        super(ResidualBlock, self).__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        out = out + residual
        return out


class UpsampleConvLayer(torch.nn.Module):
    """UpsampleConvLayer
    Upsamples the input and then does a convolution. This method gives better results
    compared to ConvTranspose2d.
    ref: http://distill.pub/2016/deconv-checkerboard/
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super(UpsampleConvLayer, self).__init__()
        self.upsample = upsample
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        x_in = x
        if self.upsample:
            x_in = torch.nn.functional.interpolate(x_in, mode='nearest', scale_factor=self.upsample)
        out = self.reflection_pad(x_in)
        out = self.conv2d(out)
        return out


class FeatureNet(torch.nn.Module):
    """A small frozen stand-in for the example's Vgg16 feature extractor."""

    def __init__(self, requires_grad=False):
        super(FeatureNet, self).__init__()
        self.slice1 = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(inplace=True))
        self.slice2 = torch.nn.Sequential(torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 16, 3, padding=1),
                                          torch.nn.ReLU(inplace=True))
        self.slice3 = torch.nn.Sequential(torch.nn.MaxPool2d(2), torch.nn.Conv2d(16, 16, 3, padding=1),
                                          torch.nn.ReLU(inplace=True))
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False

    def forward(self, X):
        h = self.slice1(X)
        h_relu1_2 = h
        h = self.slice2(h)
        h_relu2_2 = h
        h = self.slice3(h)
        h_relu3_3 = h
        vgg_outputs = namedtuple("VggOutputs", ['relu1_2', 'relu2_2', 'relu3_3'])
        out = vgg_outputs(h_relu1_2, h_relu2_2, h_relu3_3)
        return out


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    gram = features.bmm(features_t) / (ch * h * w)
    return gram


def normalize_batch(batch):
    # normalize using imagenet mean and std
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div_(255.0)
    return (batch - mean) / std


def init_from_numpy(model, seed):
    """Give every randomly initialised parameter a NumPy-drawn value, so that any library
    starts from the same weights; constant ones (norm layers' ones and zeros) stay."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 1 and p.min().item() == p.max().item():
                continue
            fan_in = p[0].numel() if p.dim() > 1 else p.numel()
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def colour_fields(rng, count, size=16):
    """Smooth random colour images in [0, 255]: a few low-frequency waves per channel."""
    grid = np.linspace(0, 1, size)
    images = np.zeros((count, 3, size, size))
    for image in images:
        for channel in image:
            fx, fy, phase = rng.uniform(0.5, 3, 2).tolist() + [rng.uniform(0, 6.3)]
            channel += np.sin(2 * np.pi * (fx * grid[:, None] + fy * grid[None, :]) + phase)
    return ((images + 1) * 127.5).astype(np.float32)


def main(argv=None):
    parser = argparse.ArgumentParser(description='fast neural style training on synthetic images')
    parser.add_argument('--epochs', type=int, default=1)
    parser.add_argument('--batch-size', type=int, default=4)
    parser.add_argument('--lr', type=float, default=1e-3)
    parser.add_argument('--content-weight', type=float, default=1e5)
    parser.add_argument('--style-weight', type=float, default=1e10)
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--device', default=None, help='default: the accelerator if any, else cpu')
    parser.add_argument('--quiet', action='store_true')
    args = parser.parse_args(argv)

    if args.device is not None:
        device = torch.device(args.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    rng = np.random.default_rng(args.seed)
    train_dataset = TensorDataset(torch.from_numpy(colour_fields(rng, 16)))
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size)

    transformer = TransformerNet()
    init_from_numpy(transformer, args.seed)
    transformer = transformer.to(device)
    optimizer = Adam(transformer.parameters(), args.lr)
    mse_loss = torch.nn.MSELoss()

    vgg = FeatureNet(requires_grad=False)
    init_from_numpy(vgg, args.seed + 1)
    vgg = vgg.to(device)
    style = torch.from_numpy(colour_fields(rng, 1))
    style = style.repeat(args.batch_size, 1, 1, 1).to(device)

    features_style = vgg(normalize_batch(style))
    gram_style = [gram_matrix(y) for y in features_style]

    record = {"losses": [], "content": [], "style": []}
    for e in range(args.epochs):
        transformer.train()
        for batch_id, (x,) in enumerate(train_loader):
            n_batch = len(x)
            optimizer.zero_grad()

            x = x.to(device)
            y = transformer(x)

            y = normalize_batch(y)
            x = normalize_batch(x)

            features_y = vgg(y)
            features_x = vgg(x)

            content_loss = args.content_weight * mse_loss(features_y.relu2_2, features_x.relu2_2)

            style_loss = 0.
            for ft_y, gm_s in zip(features_y, gram_style):
                gm_y = gram_matrix(ft_y)
                style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
            style_loss *= args.style_weight

            total_loss = content_loss + style_loss
            total_loss.backward()
            optimizer.step()

            record["losses"].append(total_loss.item())
            record["content"].append(content_loss.item())
            record["style"].append(style_loss.item())
            if not args.quiet:
                print("Epoch {}:\t[{}/{}]\tcontent: {:.6f}\tstyle: {:.6f}\ttotal: {:.6f}".format(
                    e + 1, (batch_id + 1) * n_batch, len(train_dataset),
                    content_loss.item(), style_loss.item(), total_loss.item()))

    # stylize: the trained network in eval mode, without gradients
    transformer.eval()
    with torch.no_grad():
        output = transformer(torch.from_numpy(colour_fields(rng, 1)).to(device)).cpu()
    img = output[0].clone().clamp(0, 255).numpy()
    record["stylized_mean"] = [float(img.mean())]
    return record


if __name__ == "__main__":
    print(json.dumps(main()))
