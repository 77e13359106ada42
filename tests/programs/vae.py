"""A variational autoencoder, trained the way pytorch/examples' vae/main.py trains one.

The example's network narrowed to 14x14 images: an encoder to a mean and a log-variance, the
reparameterization trick, a sigmoid decoder, and the loss binary_cross_entropy(reduction='sum')
plus the KL divergence, optimised with Adam; a test pass and decoding of fixed latent samples.
The data are synthetic: blurred NumPy-drawn strokes with values in [0, 1]. The example draws
its noise with torch.randn_like; here NumPy draws it, so that any library sees the same noise.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.utils.data
from tensorplug import nn, optim
from tensorplug.nn import functional as F


class VAE(nn.Module):
    def __init__(self, pixels=196, hidden=64, latent=8):
        super(VAE, self).__init__()
        self.pixels = pixels
        self.fc1 = nn.Linear(pixels, hidden)
        self.fc21 = nn.Linear(hidden, latent)
        self.fc22 = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, pixels)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps):
        std = torch.exp(0.5 * logvar)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x, eps):
        mu, logvar = self.encode(x.view(-1, self.pixels))
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, recon_x.size(1)), reduction='sum')
    # see Appendix B from VAE paper: Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
    # 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


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


def synthetic_strokes(rng, count):
    """Images of one horizontal and one vertical bar at random places, softened to [0, 1]."""
    images = np.zeros((count, 1, 14, 14))
    for image, row, col in zip(images, rng.integers(2, 12, count), rng.integers(2, 12, count)):
        image[0, row - 1:row + 1, :] = 1.0
        image[0, :, col - 1:col + 1] = 1.0
    images = 0.1 + 0.8 * images + 0.05 * rng.uniform(-1, 1, images.shape)
    return torch.from_numpy(images.astype(np.float32))


def main(argv=None):
    parser = argparse.ArgumentParser(description='VAE on synthetic strokes')
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--epochs', type=int, default=2)
    parser.add_argument('--seed', type=int, default=1)
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

    rng = np.random.default_rng(args.seed)
    train_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(synthetic_strokes(rng, 128)), batch_size=args.batch_size)
    test_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(synthetic_strokes(rng, 64)), batch_size=args.batch_size)

    model = VAE()
    init_from_numpy(model, args.seed)
    model = model.to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)

    def noise(rows):
        return torch.from_numpy(rng.standard_normal((rows, 8)).astype(np.float32)).to(device)

    losses, test_losses = [], []
    for epoch in range(1, args.epochs + 1):
        model.train()
        for batch_idx, (data,) in enumerate(train_loader):
            data = data.to(device)
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data, noise(len(data)))
            loss = loss_function(recon_batch, data, mu, logvar)
            loss.backward()
            optimizer.step()
            losses.append(loss.item() / len(data))

        model.eval()
        test_loss = 0
        with torch.no_grad():
            for data, in test_loader:
                data = data.to(device)
                recon_batch, mu, logvar = model(data, noise(len(data)))
                test_loss += loss_function(recon_batch, data, mu, logvar).item()
        test_loss /= len(test_loader.dataset)
        test_losses.append(test_loss)
        if not args.quiet:
            print('====> Epoch: {} Test set loss: {:.4f}'.format(epoch, test_loss))

    with torch.no_grad():
        sample = model.decode(noise(16)).cpu()
        sample = sample.view(16, 1, 14, 14)
    return {"losses": losses, "test_loss": test_losses, "sample_mean": [sample.mean().item()]}


if __name__ == "__main__":
    print(json.dumps(main()))
