"""ROC curve of an out-of-distribution score, for utils/run_report.py.

OOD examples are the positive class and a higher score means more out-of-distribution. The
threshold sweeps the distinct scores from the highest down; examples that tie at a score enter
together, as one (possibly diagonal) step, so the area equals the Mann-Whitney statistic with
ties counted one half.
"""


def roc_points(in_scores, ood_scores):
    """[(fpr, tpr)] from (0, 0) to (1, 1), one point per distinct score. Both lists non-empty."""
    labelled = sorted([(s, 0) for s in in_scores] + [(s, 1) for s in ood_scores], key=lambda p: -p[0])
    negatives, positives = len(in_scores), len(ood_scores)
    points, fp, tp, i = [(0.0, 0.0)], 0, 0, 0
    while i < len(labelled):
        score = labelled[i][0]
        while i < len(labelled) and labelled[i][0] == score:
            tp += labelled[i][1]
            fp += 1 - labelled[i][1]
            i += 1
        points.append((fp / negatives, tp / positives))
    return points


def auroc(points):
    """Area under the ROC points (trapezoids: a tie step counts half its rectangle)."""
    return sum((x1 - x0) * (y0 + y1) / 2 for (x0, y0), (x1, y1) in zip(points, points[1:]))


def fpr_at_tpr(points, target=0.95):
    """The false-positive rate at the first threshold whose true-positive rate reaches target."""
    return next(fpr for fpr, tpr in points if tpr >= target - 1e-12)
