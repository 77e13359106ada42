"""A DCGAN, trained the way pytorch/examples' dcgan/main.py trains one.

A generator of transposed convolutions with batch norm and a discriminator of strided
convolutions with LeakyReLU, both initialised by a weights_init applied through Module.apply,
trained against each other with BCELoss and two Adam optimisers, the generator's output detached
for the discriminator's step. The "real" images are synthetic 16x16 blobs; the example's latent
noise (torch.randn) is drawn with NumPy here, so that any library sees the same noise, and so
are the initial weights.
"""
import argparse
import json

import numpy as np

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.optim as optim
import tensorplug.utils.data


class Generator(nn.Module):
    def __init__(self, nz, ngf, nc):
        super(Generator, self).__init__()
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            # state size. (ngf*4) x 4 x 4
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # state size. (ngf*2) x 8 x 8
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh()
            # state size. (nc) x 16 x 16
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, nc, ndf):
        super(Discriminator, self).__init__()
        self.main = nn.Sequential(
            # input is (nc) x 16 x 16
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 8 x 8
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 4 x 4
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)


def make_weights_init(rng):
    """The example's custom weights initialization, drawing from a NumPy generator."""
    def draw(tensor, mean, std):
        tensor.copy_(torch.from_numpy(rng.normal(mean, std, tuple(tensor.shape)).astype(np.float32)))

    @torch.no_grad()
    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find('Conv') != -1:
            draw(m.weight, 0.0, 0.02)
        elif classname.find('BatchNorm') != -1:
            draw(m.weight, 1.0, 0.02)
            torch.nn.init.zeros_(m.bias)
    return weights_init


def synthetic_blobs(rng, count):
    """Gaussian blobs at random places, scaled to [-1, 1] as the example's Normalize does."""
    grid = np.arange(16)
    rows = rng.uniform(4, 12, (count, 1, 1))
    cols = rng.uniform(4, 12, (count, 1, 1))
    blobs = np.exp(-((grid[:, None] - rows) ** 2 + (grid[None, :] - cols) ** 2) / 8.0)
    return torch.from_numpy((2 * blobs[:, None] - 1).astype(np.float32))


def main(argv=None):
    parser = argparse.ArgumentParser(description='DCGAN on synthetic blobs')
    parser.add_argument('--batchSize', type=int, default=16)
    parser.add_argument('--nz', type=int, default=8, help='size of the latent z vector')
    parser.add_argument('--ngf', type=int, default=8)
    parser.add_argument('--ndf', type=int, default=8)
    parser.add_argument('--niter', type=int, default=2, help='number of epochs to train for')
    parser.add_argument('--lr', type=float, default=0.0002, help='learning rate, default=0.0002')
    parser.add_argument('--beta1', type=float, default=0.5, help='beta1 for adam. default=0.5')
    parser.add_argument('--manualSeed', type=int, default=999)
    parser.add_argument('--device', default=None, help='default: the accelerator if any, else cpu')
    parser.add_argument('--quiet', action='store_true')
    opt = parser.parse_args(argv)

    torch.manual_seed(opt.manualSeed)
    if opt.device is not None:
        device = torch.device(opt.device)
    elif torch.accelerator.is_available():
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    rng = np.random.default_rng(opt.manualSeed)
    dataset = torch.utils.data.TensorDataset(synthetic_blobs(rng, 64))
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=opt.batchSize)
    nz, nc = opt.nz, 1

    weights_init = make_weights_init(rng)
    netG = Generator(nz, opt.ngf, nc).to(device)
    netG.apply(weights_init)
    netD = Discriminator(nc, opt.ndf).to(device)
    netD.apply(weights_init)

    criterion = nn.BCELoss()

    def noise(rows):
        return torch.from_numpy(rng.standard_normal((rows, nz, 1, 1)).astype(np.float32)).to(device)

    fixed_noise = noise(16)
    real_label = 1
    fake_label = 0

    # setup optimizer
    optimizerD = optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))

    # "losses" are the discriminator's (errD), the first thing the example prints
    record = {"losses": [], "errG": [], "D_x": [], "D_G_z1": []}
    for epoch in range(opt.niter):
        for i, data in enumerate(dataloader, 0):
            ############################
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            ###########################
            # train with real
            netD.zero_grad()
            real_cpu = data[0].to(device)
            batch_size = real_cpu.size(0)
            label = torch.full((batch_size,), real_label,
                               dtype=real_cpu.dtype, device=device)

            output = netD(real_cpu)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            # train with fake
            fake = netG(noise(batch_size))
            label.fill_(fake_label)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()

            ############################
            # (2) Update G network: maximize log(D(G(z)))
            ###########################
            netG.zero_grad()
            label.fill_(real_label)  # fake labels are real for generator cost
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            optimizerG.step()

            record["losses"].append(errD.item())
            record["errG"].append(errG.item())
            record["D_x"].append(D_x)
            record["D_G_z1"].append(D_G_z1)
            if not opt.quiet:
                print('[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f'
                      % (epoch, opt.niter, i, len(dataloader),
                         errD.item(), errG.item(), D_x, D_G_z1))

    netG.eval()
    with torch.no_grad():
        fake = netG(fixed_noise)
    record["fixed_mean"] = [fake.mean().item()]
    record["running_var"] = netD.main[3].running_var.cpu().tolist()
    return record


if __name__ == '__main__':
    print(json.dumps(main()))
