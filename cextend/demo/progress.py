"""Training progress: a bar in a terminal, one plain line per epoch elsewhere.

A progress bar redraws itself with carriage returns; in a pipe or a CI log
those pile up into one enormous line, so when the stream is not a terminal
each epoch prints a short line instead.  In a terminal the bar takes the
terminal's width (and follows it when the window is resized).  The bar is
tqdm's (`pip install cextend[demo]`); without tqdm a terminal gets the
plain lines too.
"""
import sys

try:
    from tqdm import tqdm
except ImportError:         # the demo extra is not installed: plain lines
    tqdm = None


class EpochProgress:
    def __init__(self, epochs, stream=None, label="   training"):
        self.epochs = epochs
        self.stream = sys.stdout if stream is None else stream
        self.label = label
        isatty = getattr(self.stream, "isatty", None)
        self.bar = None
        if tqdm is not None and isatty is not None and isatty():
            self.bar = tqdm(total=epochs, desc=label, unit="epoch", file=self.stream,
                            dynamic_ncols=True, leave=True,
                            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]")

    def update(self, epoch, seconds, loss, train_accuracy, test_accuracy):
        """Report epoch `epoch` (1-based): its time, mean loss and accuracies (0..1)."""
        if self.bar is not None:
            self.bar.set_postfix_str("loss %.4f, test %.1f%%" % (loss, 100 * test_accuracy), refresh=False)
            self.bar.update(1)
            return
        width = len(str(self.epochs))
        print("%s epoch %*d/%d  %5.2f s  loss %.4f  train %5.1f%%  test %5.1f%%"
              % (self.label, width, epoch, self.epochs, seconds, loss, 100 * train_accuracy,
                 100 * test_accuracy), file=self.stream, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None
