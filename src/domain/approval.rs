//! The quorum of an approval policy (guide: "Approval votes"): listed
//! reviewers vote once each; `reject_threshold` rejections (default 1) reject
//! the Action, `required_approvals` approvals approve it. Who may vote is in
//! `access`.

use crate::domain::action::{ActionOption, ActionSpec, ApprovalPolicy};

/// The option a vote stands for on an options Action: "approve" is the
/// first option (`sort_order` 0), "reject" the second. None for a boolean
/// Action (true and false).
pub fn voted_option(spec: &ActionSpec, approve: bool) -> Option<&ActionOption> {
    spec.options.as_ref()?.get(usize::from(!approve))
}

/// (approvals, rejections) among `(user id, vote)` pairs.
pub fn count(votes: &[(String, String)]) -> (usize, usize) {
    let rejections = votes.iter().filter(|(_, v)| v == "reject").count();
    (votes.len() - rejections, rejections)
}

/// Whether the votes so far decide the Action: Some(true) approves it,
/// Some(false) rejects it, None waits for more votes. Rejection wins a tie
/// of thresholds, failing closed.
pub fn outcome(policy: &ApprovalPolicy, approvals: usize, rejections: usize) -> Option<bool> {
    let reject_at = policy.reject_threshold.unwrap_or(1) as usize;
    if rejections >= reject_at {
        Some(false)
    } else if approvals >= policy.required_approvals as usize {
        Some(true)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(required: u32, reject: Option<u32>) -> ApprovalPolicy {
        ApprovalPolicy {
            required_approvals: required,
            reject_threshold: reject,
            allow_self_approval: false,
        }
    }

    #[test]
    fn one_rejection_rejects_by_default_and_approvals_must_reach_the_quorum() {
        assert_eq!(outcome(&policy(2, None), 1, 0), None);
        assert_eq!(outcome(&policy(2, None), 2, 0), Some(true));
        assert_eq!(outcome(&policy(2, None), 1, 1), Some(false));
        assert_eq!(outcome(&policy(2, Some(2)), 1, 1), None);
        let votes = [
            ("a".to_owned(), "approve".to_owned()),
            ("b".to_owned(), "reject".to_owned()),
        ];
        assert_eq!(count(&votes), (1, 1));
    }
}
