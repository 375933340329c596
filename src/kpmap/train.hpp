// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Everything of kpmap::train in one include: data, every built-in
/// layer (so `Dense`, `Conv2D`, ... are reachable as classes, not only by
/// name), loss and optimizer, the Sequential and linear models, the Trainer
/// and the deck-driven configuration. A program that names only a few parts
/// includes their headers instead (kpmap/train/layers/dense.hpp, ...).

#include <kpmap/train/batches.hpp>
#include <kpmap/train/config.hpp>
#include <kpmap/train/data.hpp>
#include <kpmap/train/layers/avgpool2d.hpp>
#include <kpmap/train/layers/conv2d.hpp>
#include <kpmap/train/layers/dense.hpp>
#include <kpmap/train/layers/flatten.hpp>
#include <kpmap/train/layers/maxpool2d.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/layers/relu.hpp>
#include <kpmap/train/layers/tanh.hpp>
#include <kpmap/train/linear.hpp>
#include <kpmap/train/losses/cross_entropy.hpp>
#include <kpmap/train/losses/loss.hpp>
#include <kpmap/train/losses/mse.hpp>
#include <kpmap/train/optimizers/adam.hpp>
#include <kpmap/train/optimizers/momentum.hpp>
#include <kpmap/train/optimizers/optimizer.hpp>
#include <kpmap/train/optimizers/sgd.hpp>
#include <kpmap/train/sequential.hpp>
#include <kpmap/train/trainer.hpp>
