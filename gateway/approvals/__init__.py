"""Tool approvals: calls of listed tools run only after the allowed person says yes (`tools.approval`)."""
from gateway.approvals.rules import ApprovalRule, approval_rule, may_answer
from gateway.approvals.service import Answer, ApprovalGate, Approvals, Asker, Poster
from gateway.approvals.store import APPROVALS_DB_NAME, Approval, ApprovalRequest, ApprovalStore, SqliteApprovalStore

__all__ = [
    "APPROVALS_DB_NAME", "Answer", "Approval", "ApprovalGate", "ApprovalRequest", "ApprovalRule", "ApprovalStore",
    "Approvals", "Asker", "Poster", "SqliteApprovalStore", "approval_rule", "may_answer",
]
