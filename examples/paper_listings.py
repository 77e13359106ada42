"""The two listings of the PyTorch paper (Paszke et al., 2019), with `torch` replaced by
`tensorplug`, run on any device:

    python examples/paper_listings.py --device cpu

Listing 1 defines a custom layer as a Module and uses it inside a model; Listing 2 is one
training step of a generative adversarial network with two optimizers. Both are written the way
a PyTorch user would write them; only the import differs. (The paper's Listing 1 applies its
linear layer straight to the convolution's 4-D output; here the model pools first, so that the
shapes work, as in the benchmark model "conv(1,128,3)-global-average-pool-linear".)
"""
from __future__ import annotations

import argparse

import tensorplug as torch  # the only change from the PyTorch version
import tensorplug.nn as nn
import tensorplug.optim as optim


# --- Listing 1: a custom layer and a model using it ----------------------------------------------
class LinearLayer(nn.Module):
    def __init__(self, in_sz, out_sz):
        super().__init__()
        t1 = torch.randn(in_sz, out_sz)
        self.w = nn.Parameter(t1)
        t2 = torch.randn(out_sz)
        self.b = nn.Parameter(t2)

    def forward(self, activations):
        t = torch.mm(activations, self.w)
        return t + self.b


class FullBasicModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 128, 3)
        self.fc = LinearLayer(128, 10)

    def forward(self, x):
        t1 = self.conv(x)
        t2 = nn.functional.relu(t1)
        t3 = t2.mean(dim=(2, 3))  # global average pooling
        t4 = self.fc(t3)
        return nn.functional.softmax(t4, dim=1)


# --- Listing 2: a GAN training step with two optimizers ------------------------------------------
def create_generator(noise_size=16, features=32):
    return nn.Sequential(nn.Linear(noise_size, 64), nn.ReLU(), nn.Linear(64, features), nn.Tanh())


def create_discriminator(features=32):
    return nn.Sequential(nn.Linear(features, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1), nn.Sigmoid())


def make_gan_step(device, batch=8, noise_size=16):
    discriminator = create_discriminator().to(device)
    generator = create_generator(noise_size).to(device)
    optimD = optim.Adam(discriminator.parameters())
    optimG = optim.Adam(generator.parameters())
    loss = nn.BCELoss()
    real_label = torch.ones(batch, 1, device=device)
    fake_label = torch.zeros(batch, 1, device=device)

    def get_noise():
        return torch.randn(batch, noise_size, device=device)

    def step(real_sample):
        # (1) Update Discriminator
        optimD.zero_grad()
        errD_real = loss(discriminator(real_sample), real_label)
        errD_real.backward()
        fake = generator(get_noise())
        errD_fake = loss(discriminator(fake.detach()), fake_label)
        errD_fake.backward()
        optimD.step()
        # (2) Update Generator
        optimG.zero_grad()
        errG = loss(discriminator(fake), real_label)
        errG.backward()
        optimG.step()
        return errD_real.item() + errD_fake.item(), errG.item()

    return step


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Run the PyTorch paper's listings with tensorplug.")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    torch.manual_seed(0)

    model = FullBasicModel().to(device)
    probabilities = model(torch.randn(4, 1, 12, 12, device=device))
    print(model)
    print("Listing 1: class probabilities of shape", tuple(probabilities.shape), "rows sum to",
          [round(v, 4) for v in probabilities.sum(dim=1).tolist()])

    step = make_gan_step(device)
    for i in range(3):
        real = torch.randn(8, 32, device=device).tanh()
        d_loss, g_loss = step(real)
        print(f"Listing 2: GAN step {i}: discriminator loss {d_loss:.4f}, generator loss {g_loss:.4f}")


if __name__ == "__main__":
    main()
