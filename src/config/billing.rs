//! `[billing]` of hds.toml (guide: "Plans and billing"; DESIGN §14): the
//! operator's plans and the optional Stripe link, checked at load so a
//! mistake stops the start with the key that is wrong.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The built-in plan every workspace starts on: no limits.
pub const SELF_HOSTED: &str = "self_hosted";

/// One plan: its display name and its limits (None: unlimited).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanConfig {
    pub name: String,
    /// Actions created per calendar month (UTC).
    pub actions_per_month: Option<u64>,
    /// Members plus pending invitations.
    pub members: Option<u64>,
    /// Sources not revoked.
    pub sources: Option<u64>,
    /// Runs created per calendar month (UTC).
    pub runs_per_month: Option<u64>,
}

impl PlanConfig {
    /// The built-in `self_hosted` plan.
    pub fn self_hosted() -> Self {
        Self {
            name: "Self-hosted".into(),
            actions_per_month: None,
            members: None,
            sources: None,
            runs_per_month: None,
        }
    }
}

/// `[billing.stripe]`, checked.
#[derive(Clone, PartialEq, Eq)]
pub struct StripeConfig {
    pub secret_key: String,
    /// `https://api.stripe.com` unless a stand-in is named (tests).
    pub api_base: String,
    pub webhook_secret: String,
    /// Stripe price id → plan id.
    pub prices: BTreeMap<String, String>,
}

impl std::fmt::Debug for StripeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeConfig")
            .field("secret_key", &"<redacted>")
            .field("api_base", &self.api_base)
            .field("webhook_secret", &"<redacted>")
            .field("prices", &self.prices)
            .finish()
    }
}

/// `[billing]`, checked: plans by id (the built-in one not among them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BillingConfig {
    pub plans: BTreeMap<String, PlanConfig>,
    pub stripe: Option<StripeConfig>,
    /// `default_plan`: the plan of a workspace someone creates in the
    /// dashboard or the API, and of one whose Stripe subscription ended.
    /// `self_hosted` unless set.
    pub default_plan: String,
    /// `workspaces_per_person`: how many workspaces on the default plan one
    /// person may own and still create another through the API or the
    /// dashboard (each would bring a fresh allowance of that plan); None:
    /// no limit. `hds workspaces create` (the operator) is not limited.
    pub workspaces_per_person: Option<u32>,
}

impl Default for BillingConfig {
    fn default() -> Self {
        Self {
            plans: BTreeMap::new(),
            stripe: None,
            default_plan: SELF_HOSTED.to_owned(),
            workspaces_per_person: None,
        }
    }
}

impl BillingConfig {
    /// The plan with this id: a configured one, or the built-in `self_hosted`.
    pub fn plan(&self, id: &str) -> Option<PlanConfig> {
        match id {
            SELF_HOSTED => Some(PlanConfig::self_hosted()),
            _ => self.plans.get(id).cloned(),
        }
    }
}

/// `[billing]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BillingFile {
    #[serde(default)]
    plans: BTreeMap<String, PlanConfig>,
    stripe: Option<StripeFile>,
    default_plan: Option<String>,
    workspaces_per_person: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StripeFile {
    secret_key: Option<String>,
    api_base: Option<String>,
    webhook_secret: Option<String>,
    #[serde(default)]
    prices: BTreeMap<String, String>,
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

pub(crate) fn check(f: BillingFile) -> anyhow::Result<BillingConfig> {
    for (id, p) in &f.plans {
        anyhow::ensure!(
            id != SELF_HOSTED,
            "[billing.plans.{SELF_HOSTED}] is the built-in unlimited plan; give your plan another id"
        );
        anyhow::ensure!(
            valid_id(id),
            "[billing.plans.{id}]: a plan id is 1-64 lowercase letters, digits, '_' or '-'"
        );
        let name = p.name.trim();
        anyhow::ensure!(
            !name.is_empty() && name.chars().count() <= 100 && !name.chars().any(char::is_control),
            "[billing.plans.{id}] name must be 1-100 characters on one line"
        );
    }
    let stripe = match f.stripe {
        None => None,
        Some(s) => {
            let secret_key = s
                .secret_key
                .filter(|k| !k.trim().is_empty())
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "[billing.stripe] secret_key is missing: give the Stripe secret key (sk_…)"
                    )
                })?;
            let webhook_secret = s.webhook_secret.filter(|k| !k.trim().is_empty()).ok_or_else(|| {
                anyhow::anyhow!("[billing.stripe] webhook_secret is missing: give the endpoint's signing secret (whsec_…)")
            })?;
            let api_base = s
                .api_base
                .unwrap_or_else(|| "https://api.stripe.com".into())
                .trim_end_matches('/')
                .to_owned();
            anyhow::ensure!(
                url::Url::parse(&api_base)
                    .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some()),
                "[billing.stripe] api_base = {api_base:?} is not an http(s) URL such as \"https://api.stripe.com\""
            );
            for (price, plan) in &s.prices {
                anyhow::ensure!(
                    plan == SELF_HOSTED || f.plans.contains_key(plan),
                    "[billing.stripe] prices: {price:?} names plan {plan:?}, which no [billing.plans.{plan}] defines"
                );
            }
            Some(StripeConfig {
                secret_key,
                api_base,
                webhook_secret,
                prices: s.prices,
            })
        }
    };
    let default_plan = f.default_plan.unwrap_or_else(|| SELF_HOSTED.to_owned());
    anyhow::ensure!(
        default_plan == SELF_HOSTED || f.plans.contains_key(&default_plan),
        "[billing] default_plan = {default_plan:?} names no plan: define [billing.plans.{default_plan}] or name one that is defined"
    );
    // Counted on the default plan: on `self_hosted`, which every workspace
    // the operator made is on too, the operator's own would count.
    anyhow::ensure!(
        f.workspaces_per_person.is_none() || default_plan != SELF_HOSTED,
        "[billing] workspaces_per_person counts the workspaces a person owns on default_plan, which is \
         self_hosted (unlimited, and the plan of every workspace the operator made): set default_plan to \
         one of your [billing.plans.*] as well"
    );
    Ok(BillingConfig {
        plans: f.plans,
        stripe,
        default_plan,
        workspaces_per_person: f.workspaces_per_person,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> anyhow::Result<BillingConfig> {
        #[derive(Deserialize)]
        struct F {
            billing: BillingFile,
        }
        check(toml::from_str::<F>(text)?.billing)
    }

    #[test]
    fn plans_and_stripe_parse_with_defaults() {
        let b = parse(
            "[billing.plans.team]\nname = \"Team\"\nactions_per_month = 1000\nmembers = 10\n\
             [billing.stripe]\nsecret_key = \"sk_test\"\nwebhook_secret = \"whsec_x\"\n\
             prices = { \"price_1\" = \"team\" }\n",
        )
        .unwrap();
        let team = b.plan("team").unwrap();
        assert_eq!(
            (team.actions_per_month, team.members, team.sources),
            (Some(1000), Some(10), None)
        );
        assert_eq!(b.plan(SELF_HOSTED).unwrap(), PlanConfig::self_hosted());
        let s = b.stripe.unwrap();
        assert_eq!(s.api_base, "https://api.stripe.com");
        assert!(!format!("{s:?}").contains("sk_test"));
    }

    #[test]
    fn the_default_plan_is_self_hosted_or_a_defined_one() {
        assert_eq!(parse("[billing]\n").unwrap().default_plan, SELF_HOSTED);
        let b = parse("[billing]\ndefault_plan = \"free\"\n[billing.plans.free]\nname = \"Free\"\nactions_per_month = 100\n").unwrap();
        assert_eq!(b.default_plan, "free");
        let e = parse("[billing]\ndefault_plan = \"gold\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("default_plan = \"gold\" names no plan"), "{e}");
    }

    /// `workspaces_per_person` counts on the default plan, so it needs one
    /// of the operator's plans there, not `self_hosted`.
    #[test]
    fn workspaces_per_person_needs_a_default_plan_of_ones_own() {
        let b = parse("[billing]\ndefault_plan = \"free\"\nworkspaces_per_person = 2\n[billing.plans.free]\nname = \"Free\"\n").unwrap();
        assert_eq!(b.workspaces_per_person, Some(2));
        let e = parse("[billing]\nworkspaces_per_person = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("set default_plan to one of your"), "{e}");
    }

    #[test]
    fn mistakes_name_the_key() {
        for (text, needle) in [
            (
                "[billing.plans.self_hosted]\nname = \"X\"\n",
                "[billing.plans.self_hosted]",
            ),
            (
                "[billing.plans.Team]\nname = \"X\"\n",
                "[billing.plans.Team]",
            ),
            (
                "[billing.plans.team]\nname = \" \"\n",
                "[billing.plans.team] name",
            ),
            (
                "[billing.plans.team]\nname = \"T\"\nmembers = -1\n",
                "members",
            ),
            ("[billing.plans.team]\nname = \"T\"\nseats = 3\n", "seats"),
            (
                "[billing.stripe]\nwebhook_secret = \"w\"\n",
                "[billing.stripe] secret_key",
            ),
            (
                "[billing.stripe]\nsecret_key = \"k\"\n",
                "[billing.stripe] webhook_secret",
            ),
            (
                "[billing.stripe]\nsecret_key = \"k\"\nwebhook_secret = \"w\"\napi_base = \"ftp://x\"\n",
                "[billing.stripe] api_base",
            ),
            (
                "[billing.stripe]\nsecret_key = \"k\"\nwebhook_secret = \"w\"\nprices = { p = \"gold\" }\n",
                "[billing.stripe] prices",
            ),
        ] {
            let e = format!("{:#}", parse(text).unwrap_err());
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
