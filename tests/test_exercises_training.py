"Lesson 09's check accepts the training step and rejects the stub and each typical mistake with its own hint."
import torch
import pytest
from transformers_scratch.checks.toolkit import assert_check
from transformers_scratch.training import train_step
from transformers_scratch.checks.training import check_train_step
from conftest import stub

pytestmark = pytest.mark.usefixtures('one_thread')   # tiny models: one thread is faster


def forgot_zero_grad(model, opt, loss_func, x, y):
    model.train()
    loss = loss_func(model(x), y); loss.backward(); opt.step()
    return loss.detach()
def zero_after_step(model, opt, loss_func, x, y):      # fastai's order: right only if no gradient was left before
    model.train()
    loss = loss_func(model(x), y); loss.backward(); opt.step(); opt.zero_grad()
    return loss.detach()
def zero_between(model, opt, loss_func, x, y):
    model.train()
    loss = loss_func(model(x), y); loss.backward(); opt.zero_grad(); opt.step()
    return loss.detach()
def no_backward(model, opt, loss_func, x, y):
    model.train(); opt.zero_grad()
    loss = loss_func(model(x), y); opt.step()
    return loss.detach()
def no_step(model, opt, loss_func, x, y):
    model.train(); opt.zero_grad()
    loss = loss_func(model(x), y); loss.backward()
    return loss.detach()
def step_first(model, opt, loss_func, x, y):
    model.train(); opt.zero_grad()
    loss = loss_func(model(x), y); opt.step(); loss.backward()
    return loss.detach()
def step_twice(model, opt, loss_func, x, y):
    model.train(); opt.zero_grad()
    loss = loss_func(model(x), y); loss.backward(); opt.step(); opt.step()
    return loss.detach()
def no_train_mode(model, opt, loss_func, x, y):
    opt.zero_grad()
    loss = loss_func(model(x), y); loss.backward(); opt.step()
    return loss.detach()
def with_graph(model, opt, loss_func, x, y):
    model.train(); opt.zero_grad()
    loss = loss_func(model(x), y); loss.backward(); opt.step()
    return loss
def as_number(model, opt, loss_func, x, y): return train_step(model, opt, loss_func, x, y).item()
def returns_none(model, opt, loss_func, x, y): train_step(model, opt, loss_func, x, y)
def swapped(model, opt, loss_func, x, y):
    model.train(); opt.zero_grad()
    loss = loss_func(y, model(x)); loss.backward(); opt.step()
    return loss.detach()
def under_no_grad(model, opt, loss_func, x, y):
    model.train(); opt.zero_grad()
    with torch.no_grad(): loss = loss_func(model(x), y)
    loss.backward(); opt.step()
    return loss.detach()
def loss_after_update(model, opt, loss_func, x, y):
    train_step(model, opt, loss_func, x, y)
    with torch.no_grad(): return loss_func(model(x), y)
def to_cpu(model, opt, loss_func, x, y): return train_step(model, opt, loss_func, x, y).cpu()
def as_float32(model, opt, loss_func, x, y): return train_step(model, opt, loss_func, x, y).float()
def normalises_x_in_place(model, opt, loss_func, x, y): return train_step(model, opt, loss_func, x.sub_(x.mean()), y)

def test_check_train_step():
    assert_check(check_train_step, train_step, [
        (stub, 'not solved'),
        (forgot_zero_grad, 'accumulated'),
        (zero_after_step, 'not after the step'),
        (zero_between, 'no gradient is left'),
        (no_backward, 'no gradient is left'),
        (no_step, 'did not move although backward'),
        (step_first, r'opt.step\(\) after loss.backward\(\)'),
        (step_twice, 'stepped twice'),
        (no_train_mode, 'eval mode'),
        (with_graph, 'detached'),
        (as_number, 'Python number'),
        (returns_none, 'returned None'),
        (swapped, 'predictions first'),
        (under_no_grad, 'no graph'),
        (loss_after_update, "not this step's"),
        (to_cpu, "device"),
        (as_float32, "dtype"),
        (normalises_x_in_place, 'changed its input'),
    ])


# --- issue 31: mistakes that only show in training mode, and the step's other slips -----------------------------
def logs_predictions_first(model, opt, loss_func, x, y):   # a forward to look at the predictions, then another for the loss
    model.train(); opt.zero_grad()
    preds = model(x)                                         # noqa: F841 (kept "for a look")
    loss = loss_func(model(x), y)
    loss.backward(); opt.step()
    return loss.detach()
def summed_loss(model, opt, loss_func, x, y):
    model.train(); opt.zero_grad()
    loss = loss_func(model(x), y) * len(x)                  # "the loss of the whole batch"
    loss.backward(); opt.step()
    return (loss / len(x)).detach()
def clipped(model, opt, loss_func, x, y):
    model.train(); opt.zero_grad()
    loss = loss_func(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.)
    opt.step()
    return loss.detach()
def eval_then_train(model, opt, loss_func, x, y):          # the forward in eval mode (no dropout), train mode set after
    opt.zero_grad()
    loss = loss_func(model(x), y)
    loss.backward(); opt.step()
    model.train()
    return loss.detach()
def crashes_oddly(model, opt, loss_func, x, y): return train_step(model, opt, loss_func, x[:, :2], y)

def test_check_train_step_training_mode_and_more():
    assert_check(check_train_step, train_step, [
        (logs_predictions_first, 'ran the model on x twice'),
        (summed_loss, 'batch-size times too large'),
        (clipped, 'clipping'),
        (eval_then_train, r'parameters after the step are wrong|eval mode'),
        (crashes_oddly, r'raised RuntimeError on \(Sequential, SGD, cross_entropy, x \(4, 5\), y \(4,\)\): mat1'),
    ])

# valid answers in other styles
def grads_to_none(model, opt, loss_func, x, y):            # gradients cleared by hand, the step without a graph
    model.train(True)
    for p in model.parameters(): p.grad = None
    out = model(x)
    loss = loss_func(out, y)
    loss.backward(retain_graph=False)
    with torch.no_grad(): opt.step()
    return loss.detach().clone()
def autograd_grad(model, opt, loss_func, x, y):            # torch.autograd.grad, the gradients set by hand
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    loss = loss_func(model(x), y)
    for p, g in zip(params, torch.autograd.grad(loss, params)): p.grad = g
    opt.step()
    return loss.detach()
def model_zero_grad(model, opt, loss_func, x, y):          # model.zero_grad(), a keyword call, `.data`-free
    model.train()
    model.zero_grad(set_to_none=False)
    loss = loss_func(input=model(x), target=y)
    loss.backward()
    opt.step()
    return loss.data.clone()

def test_valid_styles_pass():
    for fn in (grads_to_none, autograd_grad, model_zero_grad):
        assert_check(check_train_step, fn)

def divided_again(model, opt, loss_func, x, y):
    model.train(); opt.zero_grad()
    loss = loss_func(model(x), y) / len(x)
    loss.backward(); opt.step()
    return (loss * len(x)).detach()
def rebuilt_from_item(model, opt, loss_func, x, y): return torch.tensor(train_step(model, opt, loss_func, x, y).item())
def eval_at_the_end(model, opt, loss_func, x, y):
    loss = train_step(model, opt, loss_func, x, y)
    model.eval()
    return loss

def test_check_train_step_round_two():
    assert_check(check_train_step, train_step, [
        (divided_again, 'batch-size times too small'), (rebuilt_from_item, r'you converted it.*torch.tensor\(loss.item\(\)\)'),
        (eval_at_the_end, 'switched the model to eval mode at the end')])

def float_predictions(model, opt, loss_func, x, y):
    model.train(); opt.zero_grad()
    loss = loss_func(model(x).float(), y.float() if y.is_floating_point() else y)
    loss.backward(); opt.step()
    return loss.detach()

def test_check_train_step_round_three():
    assert_check(check_train_step, train_step, [(float_predictions, r'the loss is torch.float32, the model.s is torch.float64')])

# issue 31, second audit: the mode the forward ran in, wherever model.train() is called
def train_after_forward(model, opt, loss_func, x, y):    # the forward ran in eval mode, the backward in train mode
    opt.zero_grad()
    loss = loss_func(model(x), y)
    model.train()
    loss.backward()
    opt.step()
    return loss.detach()
def train_after_step(model, opt, loss_func, x, y):       # "leave it in training mode": too late for this step
    opt.zero_grad()
    loss = loss_func(model(x), y)
    loss.backward()
    opt.step()
    model.train()
    return loss.detach()
def eval_forward_train_mode(model, opt, loss_func, x, y):   # the forward run under evaluating-style eval(), mode given back
    model.train()
    opt.zero_grad()
    model.eval()
    out = model(x)
    model.train()
    loss = loss_func(out, y)
    loss.backward()
    opt.step()
    return loss.detach()

def test_forward_mode_is_named():
    assert_check(check_train_step, train_step, [
        (train_after_forward, r'forward ran with the model in eval mode.*before model\(x\)'),
        (train_after_step, r'forward ran with the model in eval mode'),
        (eval_forward_train_mode, r'forward ran with the model in eval mode')])

def peek_in_eval(model, opt, loss_func, x, y):            # a look at the predictions in eval mode first: harmless
    model.eval()
    with torch.no_grad(): model(x)
    model.train()
    opt.zero_grad()
    loss = loss_func(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()

def test_an_extra_eval_forward_passes():
    assert_check(check_train_step, peek_in_eval)


# third audit: an update that is not `opt`'s (an optimiser of one's own, a new one each step, a manual SGD) is named
def own_optimiser(model, opt, loss_func, x, y):            # ignores opt: SGD(lr=0.1), right for the first fixture only
    return train_step(model, torch.optim.SGD(model.parameters(), lr=0.1), loss_func, x, y)
def new_optimiser_each_step(model, opt, loss_func, x, y):  # opt's settings, but a fresh state (momentum, Adam's moments)
    inner = getattr(opt, 'opt', opt)
    return train_step(model, type(inner)(model.parameters(), **inner.defaults), loss_func, x, y)
def manual_sgd(model, opt, loss_func, x, y):
    model.train()
    opt.zero_grad()
    loss = loss_func(model(x), y)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters(): p -= opt.param_groups[0]['lr'] * p.grad
    return loss.detach()

def test_audit3_update_is_opts():
    assert_check(check_train_step, train_step, [(own_optimiser, r'not by the optimiser you were given'),
                                                (new_optimiser_each_step, r'not by the optimiser you were given'),
                                                (manual_sgd, r'not by the optimiser you were given')])
