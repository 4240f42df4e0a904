//! The quorum of an approval policy (guide: "Approval votes"): listed
//! reviewers vote once each; `reject_threshold` rejections (default 1) reject
//! the Action, `required_approvals` approvals approve it. Who may vote is in
//! `access`.

use crate::domain::action::{ActionOption, ActionSpec, ApprovalPolicy};
use crate::domain::words;

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

/// Why a policy could leave the Action undecided after every one of the
/// `voters` who may vote has voted, or None when it cannot: that happens
/// when `required_approvals - 1` approvals and `reject_threshold - 1`
/// rejections together leave no voter over, i.e. when
/// `required_approvals + reject_threshold - 1 > voters`.
pub fn can_stall(policy: &ApprovalPolicy, voters: usize) -> Option<String> {
    let required = policy.required_approvals as usize;
    let reject_at = policy.reject_threshold.unwrap_or(1) as usize;
    if required + reject_at <= voters + 1 {
        return None;
    }
    Some(if reject_at > voters {
        format!(
            "{reject_at} rejections are needed to reject but only {voters} of the listed reviewers may vote (viewers and the person it is requested by may not): it could never be rejected; with {voters} voters and {required} approvals required, reject_threshold may be at most {}",
            voters + 1 - required
        )
    } else {
        format!(
            "{required} approvals to approve and {reject_at} rejections to reject could leave it undecided after all {voters} listed reviewers who may vote have voted ({} and {}): with {voters} voters and {required} approvals required, reject_threshold may be at most {}",
            words::count(required as i64 - 1, "approval", "approvals"),
            words::count((voters + 1 - required) as i64, "rejection", "rejections"),
            voters + 1 - required
        )
    })
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

    /// A policy stalls when every voter can vote and neither threshold is
    /// reached: 2 of 3 approvals with 3 rejections needed stalls at 1–2.
    #[test]
    fn a_policy_that_could_stall_after_every_vote_is_named() {
        assert_eq!(can_stall(&policy(2, None), 2), None);
        assert_eq!(can_stall(&policy(2, Some(2)), 3), None);
        assert_eq!(can_stall(&policy(1, Some(3)), 3), None);
        let stall = can_stall(&policy(2, Some(3)), 3).unwrap();
        assert!(stall.contains("(1 approval and 2 rejections)"), "{stall}");
        assert!(stall.contains("at most 2"), "{stall}");
        let never = can_stall(&policy(2, Some(4)), 3).unwrap();
        assert!(never.contains("could never be rejected"), "{never}");
    }
}
