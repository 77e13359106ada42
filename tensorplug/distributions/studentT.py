"""PyTorch's module name for StudentT (``torch.distributions.studentT``), so that imports written
against it work unchanged; the distribution lives in student_t.py."""
from .student_t import StudentT

__all__ = ["StudentT"]
