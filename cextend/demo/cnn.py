"""`python -m cextend.demo --model cnn`: a small convolutional network on the
8x8 digits (Conv2d, BatchNorm2d, ReLU, MaxPool2d, Flatten, Dropout, Linear),
trained with AdamW and a cosine learning-rate schedule, then timed against the
same model in torch when torch is installed."""
import cextend as cx
import cextend.nn

from cextend.demo import timing
from cextend.demo.training import epoch_of, fit, library_step, load_torch, torch_twin

DEFAULTS = dict(epochs=12, batch_size=64, lr=3e-3, channels=(16, 32))
TARGET = 97.0          # test accuracy (%) of a full-length run; below it the demo fails
WEIGHT_DECAY = 1e-2
DROPOUT = 0.25


def build_model(nn, channels):
    """The network, written once for cextend.nn or torch.nn: two blocks of
    3x3 convolution, batch norm, ReLU and 2x2 max pooling (8x8 -> 4x4 -> 2x2),
    then a linear classifier."""
    c1, c2 = channels
    return nn.Sequential(
        nn.Conv2d(1, c1, kernel_size=3, padding=1), nn.BatchNorm2d(c1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, kernel_size=3, padding=1), nn.BatchNorm2d(c2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(DROPOUT), nn.Linear(c2 * 2 * 2, 10))


def describe(channels):
    """build_model's layers, a block per line (print(model) has lines over 100 columns)."""
    c1, c2 = channels
    blocks = ["Conv2d(1->%d, 3x3, pad 1), BatchNorm2d, ReLU, MaxPool2d(2)" % c1,
              "Conv2d(%d->%d, 3x3, pad 1), BatchNorm2d, ReLU, MaxPool2d(2)" % (c1, c2)]
    width = max(map(len, blocks))
    return [blocks[0].ljust(width) + "  8x8 -> 4x4", blocks[1].ljust(width) + "  4x4 -> 2x2",
            "Flatten, Dropout(%g), Linear(%d->10)" % (DROPOUT, c2 * 4)]


def optimizer_and_schedule(lib, model, lr, epochs, steps_per_epoch):
    """AdamW, with the learning rate annealed to 0 along a cosine over every minibatch step."""
    optimizer = lib.optim.AdamW(model.parameters(), lr=lr, weight_decay=WEIGHT_DECAY)
    schedule = lib.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * steps_per_epoch)
    return optimizer, schedule


def images(data):
    """(x_train, y_train, x_test, y_test) with the flat 64-pixel rows as (N, 1, 8, 8) images."""
    x_train, y_train, x_test, y_test = data
    return x_train.reshape(-1, 1, 8, 8), y_train, x_test.reshape(-1, 1, 8, 8), y_test


def run(args, data, stream=None):
    """Sections 2 and 3; returns the test accuracy."""
    data = images(data)
    steps = -(-len(data[1]) // args.batch_size)
    cx.manual_seed(args.seed)
    model = build_model(cextend.nn, args.channels)
    if args.dtype == "float64":
        model = model.double()
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    print("2. a CNN on the 8x8 digits, AdamW with a cosine learning-rate schedule", file=stream)
    print("   %d train / %d test images, %s, batches of %d\n"
          % (len(data[1]), len(data[3]), args.dtype, args.batch_size), file=stream)
    for line in describe(args.channels):
        print("   " + line, file=stream)
    print(file=stream)
    opt, schedule = optimizer_and_schedule(cx, model, args.lr, args.epochs, steps)
    test_accuracy = fit(model, opt, data, args.epochs, args.batch_size, args.seed, schedule, stream)
    print("\n   test accuracy: %.1f%%\n" % (100 * test_accuracy), file=stream)

    if args.timing_rounds > 0:
        torch, missing = load_torch(args.torch)
        if torch is None:
            print("3. (%s: no epoch-time comparison)" % missing, file=stream)
        else:
            model.load_state_dict(initial)
            time_epochs(args, torch, model, data, steps, stream)
    return test_accuracy


def time_epochs(args, torch, model, data, steps, stream):
    x, y = data[0], data[1]
    twin = torch_twin(torch, model, lambda nn: build_model(nn, args.channels))
    runners, labels = {}, {}
    for name, lib, net in (("cextend", cx, model), ("torch", torch, twin)):
        opt, schedule = optimizer_and_schedule(lib, net, args.lr, args.epochs, steps)
        net.train()
        runners[name] = epoch_of(library_step(lib, net, opt, schedule, x, y), len(y), args.batch_size, args.seed)
    labels["cextend"] = "cextend (C kernels, autograd)"
    labels["torch"] = "torch %s" % torch.__version__
    return timing.compare(runners, labels, args.timing_rounds, args.timing_threads, torch, stream)
