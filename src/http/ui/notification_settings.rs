//! The notification settings pages (guide: "Notifications in the dashboard"):
//! a person's preferences, `GET|POST /app/settings/notifications`, and the
//! workspace's policy, `GET|POST /app/settings/notification-policy` (every
//! member reads it; owners and admins change it — the page offers the form
//! only to them, and the service checks again). Both forms send every field,
//! built into the same update bodies the API takes.

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::app::AppState;
use crate::domain::access;
use crate::domain::notification::{
    Digest, Kind, MAX_EXPIRY_WARNING_MINUTES, NewActionAudience, NotificationPreferenceUpdate,
    WorkspaceNotificationPolicyUpdate,
};
use crate::error::{Code, Error};
use crate::http::session::PageUser;
use crate::http::ui::view::{
    DoneQuery, FormData, Layout, PageQuery, UiError, check_csrf, see_other,
};
use crate::service::notifications::{self, PolicyOut, PreferencesOut};

/// One row of the preferences table.
pub struct KindRow {
    pub name: &'static str,
    pub label: &'static str,
    pub in_app: bool,
    pub email: bool,
    pub mandatory: bool,
}

#[derive(Template, WebTemplate)]
#[template(path = "notification_settings.html")]
pub struct PreferencesPage {
    layout: Layout,
    email: bool,
    digest: &'static str,
    rows: Vec<KindRow>,
    email_configured: bool,
    /// The workspace switched e-mail off in its policy.
    workspace_email_off: bool,
    /// The active workspace's name: the settings are for it.
    workspace: String,
    /// Opened from an e-mail about another of the person's workspaces
    /// (`?workspace=`): (its id, its name), to offer switching to it.
    other: Option<(String, String)>,
    flash: Option<&'static str>,
    error: Option<String>,
}

/// The settings page's query: `done`, and `workspace` (the one an e-mail's
/// link is about).
#[derive(Debug, Default, serde::Deserialize)]
pub struct SettingsQuery {
    #[serde(default)]
    done: Option<String>,
    #[serde(default)]
    workspace: Option<String>,
}

fn digest_name(d: Digest) -> &'static str {
    match d {
        Digest::Off => "off",
        Digest::Hourly => "hourly",
        Digest::Daily => "daily",
    }
}

async fn preferences_view(
    st: &AppState,
    p: &PageUser,
    shown: PreferencesOut,
) -> Result<PreferencesPage, UiError> {
    let policy = notifications::policy(&st.services, p.user.clone()).await?;
    let rows = Kind::ALL
        .iter()
        .map(|k| {
            let ch = shown.events.get(k).copied();
            let mandatory = shown.mandatory.contains(k);
            KindRow {
                name: k.as_str(),
                label: k.label(),
                in_app: mandatory || ch.is_some_and(|c| c.in_app),
                email: mandatory || ch.is_some_and(|c| c.email),
                mandatory,
            }
        })
        .collect();
    let layout = Layout::signed_in(st, p, "Notification settings", "notifications").await?;
    let workspace = layout
        .workspaces
        .iter()
        .find(|w| w.active)
        .map(|w| w.name.clone())
        .unwrap_or_default();
    Ok(PreferencesPage {
        layout,
        workspace,
        other: None,
        email: shown.email,
        digest: digest_name(shown.email_digest),
        rows,
        email_configured: shown.email_configured,
        workspace_email_off: !policy.email_enabled,
        flash: None,
        error: None,
    })
}

/// GET /app/settings/notifications
pub async fn preferences_page(
    State(st): State<AppState>,
    p: PageUser,
    PageQuery(q): PageQuery<SettingsQuery>,
) -> Result<PreferencesPage, UiError> {
    let shown = notifications::preferences(&st.services, p.user.clone()).await?;
    let mut page = preferences_view(&st, &p, shown).await?;
    if q.done.as_deref() == Some("saved") {
        page.flash = Some("Notification settings saved.");
    }
    // A link from an e-mail about another workspace of theirs: say so, and
    // offer to switch (a GET changes nothing).
    page.other = q.workspace.and_then(|id| {
        page.layout
            .workspaces
            .iter()
            .find(|w| w.id == id && !w.active)
            .map(|w| (w.id.clone(), w.name.clone()))
    });
    Ok(page)
}

/// The form as the API's update body: every field, every kind. A box not
/// ticked is `false`. The kinds the page showed as mandatory (locked, named
/// in hidden `mandatory` fields) are left out, so the person's own choice
/// for them stays stored for when the policy lets go; only a page older
/// than the policy (or a forged form) sends one as switched off.
fn preferences_update(form: &FormData) -> Result<NotificationPreferenceUpdate, Error> {
    let ticked = |field: &str, kind: &str| form.all(field).any(|v| v == kind);
    let mut events = Map::new();
    for name in Kind::NAMES {
        if ticked("mandatory", name) {
            continue;
        }
        events.insert(
            name.to_owned(),
            json!({"in_app": ticked("in_app", name), "email": ticked("email_kind", name)}),
        );
    }
    let digest = form.get("email_digest").unwrap_or("off");
    if !["off", "hourly", "daily"].contains(&digest) {
        return Err(Error::field(
            "email_digest",
            "choose how often e-mail comes: at once, hourly or daily",
        ));
    }
    let body = json!({
        "email": form.get("email") == Some("on"),
        "email_digest": digest,
        "events": Value::Object(events),
    });
    serde_json::from_value(body).map_err(|e| Error::field("body", e.to_string()))
}

/// Both forms name the workspace they showed (`workspace_id`): the person
/// may have switched since, in this tab or another, and the settings of
/// the workspace now active are not the ones they were looking at.
fn same_workspace(p: &PageUser, form: &FormData) -> Result<(), Error> {
    let active = p.user.active_workspace().map(|m| m.workspace_id.as_str());
    match form.get("workspace_id") {
        Some(shown) if Some(shown) != active => Err(Error::field(
            "workspace_id",
            "this page was for another workspace, and you have switched workspace since (in this tab or another). \
             Below are the settings of the workspace now active: make your change again here, or switch back first",
        )),
        _ => Ok(()),
    }
}

/// POST /app/settings/notifications: saves the whole form, or shows it
/// again with what was refused (nothing saved).
pub async fn save_preferences(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    let (typed, result) = match same_workspace(&p, &form).and_then(|()| preferences_update(&form)) {
        Ok(req) => (
            Some(req.clone()),
            notifications::update_preferences(&st.services, p.user.clone(), req).await,
        ),
        Err(e) => (None, Err(e)),
    };
    match result {
        Ok(_) => Ok(see_other("/app/settings/notifications?done=saved")),
        Err(e) if e.code == Code::NotificationMandatory && typed.is_some() => {
            // A page older than the policy: what was typed stays, with the
            // kinds now mandatory locked, so saving again keeps the rest.
            let req = typed.unwrap_or_default();
            let shown =
                notifications::preview_preferences(&st.services, p.user.clone(), req).await?;
            let mut page = preferences_view(&st, &p, shown).await?;
            page.error = Some(became_mandatory(&e));
            Ok((e.code.status(), page).into_response())
        }
        Err(e) if e.code.status().is_client_error() && e.code != Code::WorkspaceNotFound => {
            // Shown as stored: the refused change was not saved.
            let shown = notifications::preferences(&st.services, p.user.clone()).await?;
            let mut page = preferences_view(&st, &p, shown).await?;
            page.error = Some(format!("Not saved: {}", e.message));
            Ok((e.code.status(), page).into_response())
        }
        Err(e) => Err(e.into()),
    }
}

/// What a person reads when their page switched off a kind that became
/// mandatory after it was loaded: the kinds by their labels, not the
/// API's field paths (`events.action.mentioned.email`).
fn became_mandatory(e: &Error) -> String {
    let mut labels: Vec<String> = Vec::new();
    let fields = e.details.get("errors").and_then(Value::as_array);
    for f in fields.into_iter().flatten() {
        let kind = f["field"]
            .as_str()
            .and_then(|f| f.strip_prefix("events."))
            .and_then(|f| f.rsplit_once('.'))
            .and_then(|(k, _)| Kind::parse(k));
        if let Some(k) = kind {
            let label = format!("“{}”", k.label());
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
    }
    let (them, are) = if labels.len() == 1 {
        ("it", "is")
    } else {
        ("they", "are")
    };
    format!(
        "Not saved: {} became mandatory in this workspace after this page was loaded (an owner or admin sets the policy), so {them} cannot be switched off and {are} locked below now. Your other changes are still on this page: save again to keep them.",
        labels.join(", ")
    )
}

/// One mandatory-kind checkbox of the policy form.
pub struct MandatoryRow {
    pub name: &'static str,
    pub label: &'static str,
    pub checked: bool,
}

#[derive(Template, WebTemplate)]
#[template(path = "notification_policy.html")]
pub struct PolicyPage {
    layout: Layout,
    /// Owners and admins get the form; others read the policy.
    manages: bool,
    new_action: &'static str,
    email_enabled: bool,
    /// As entered (a refused value is shown again beside its message).
    minutes: String,
    mandatory: Vec<MandatoryRow>,
    max_minutes: i64,
    /// Field name → message, from a refused form.
    field_errors: Vec<(String, String)>,
    flash: Option<&'static str>,
    error: Option<String>,
}

impl PolicyPage {
    /// The message for `field`, if the form was refused over it.
    pub fn error_for(&self, field: &str) -> Option<&str> {
        self.field_errors
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, m)| m.as_str())
    }
}

fn audience_name(a: NewActionAudience) -> &'static str {
    match a {
        NewActionAudience::AllReviewers => "all_reviewers",
        NewActionAudience::AssignedOnly => "assigned_only",
        NewActionAudience::None => "none",
    }
}

async fn policy_view(st: &AppState, p: &PageUser, shown: PolicyOut) -> Result<PolicyPage, UiError> {
    let role = p.user.active_or_404()?.role;
    Ok(PolicyPage {
        layout: Layout::signed_in(st, p, "Notification policy", "notifications").await?,
        manages: access::can_set_notification_policy(role),
        new_action: audience_name(shown.new_action),
        email_enabled: shown.email_enabled,
        minutes: shown.expiry_warning_minutes.to_string(),
        mandatory: Kind::ALL
            .iter()
            .map(|k| MandatoryRow {
                name: k.as_str(),
                label: k.policy_label(),
                checked: shown.mandatory.contains(k),
            })
            .collect(),
        max_minutes: MAX_EXPIRY_WARNING_MINUTES,
        field_errors: Vec::new(),
        flash: None,
        error: None,
    })
}

/// GET /app/settings/notification-policy
pub async fn policy_page(
    State(st): State<AppState>,
    p: PageUser,
    PageQuery(q): PageQuery<DoneQuery>,
) -> Result<PolicyPage, UiError> {
    let shown = notifications::policy(&st.services, p.user.clone()).await?;
    let mut page = policy_view(&st, &p, shown).await?;
    if q.done.as_deref() == Some("saved") {
        page.flash = Some("Notification policy saved.");
    }
    Ok(page)
}

/// The policy form as the API's update body, or the field it cannot read.
fn policy_update(form: &FormData) -> Result<WorkspaceNotificationPolicyUpdate, Error> {
    let minutes = form.get("expiry_warning_minutes").unwrap_or("").trim();
    let minutes: i64 = minutes.parse().map_err(|_| {
        Error::field(
            "expiry_warning_minutes",
            format!(
                "enter a whole number of minutes, 0-{MAX_EXPIRY_WARNING_MINUTES} (0 turns the warning off)"
            ),
        )
    })?;
    let mandatory: Vec<&str> = form.all("mandatory").collect();
    let body = json!({
        "new_action": form.get("new_action").unwrap_or(""),
        "email_enabled": form.get("email_enabled") == Some("on"),
        "expiry_warning_minutes": minutes,
        "mandatory": mandatory,
    });
    serde_json::from_value(body).map_err(|_| {
        Error::field(
            "new_action",
            "choose who hears of a new Action, and only the listed kinds",
        )
    })
}

/// The `details.errors` of a refusal as (field, message) pairs.
fn field_errors(e: &Error) -> Vec<(String, String)> {
    e.details
        .get("errors")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|f| {
                    Some((
                        f["field"].as_str()?.to_owned(),
                        f["message"].as_str()?.to_owned(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// POST /app/settings/notification-policy: owners and admins.
pub async fn save_policy(
    State(st): State<AppState>,
    p: PageUser,
    headers: HeaderMap,
    form: FormData,
) -> Result<Response, UiError> {
    check_csrf(&st, &headers, &p, &form)?;
    let result = match same_workspace(&p, &form).and_then(|()| policy_update(&form)) {
        Ok(req) => notifications::update_policy(&st.services, p.user.clone(), req).await,
        Err(e) => Err(e),
    };
    let e = match result {
        Ok(_) => return Ok(see_other("/app/settings/notification-policy?done=saved")),
        Err(e) if e.code == Code::ValidationError => e,
        // Not theirs to change (403), or no workspace: the error page.
        Err(e) => return Err(e.into()),
    };
    // The form again as entered, each message by its field; nothing saved.
    // Not after a switch of workspace: what was entered was for another
    // workspace, and saving this page again would write it into this one.
    let shown = notifications::policy(&st.services, p.user.clone()).await?;
    let mut page = policy_view(&st, &p, shown).await?;
    if crate::http::ui::view::error_field(&e).as_deref() == Some("workspace_id") {
        page.error = Some(format!("Not saved: {}", e.message));
        return Ok((e.code.status(), page).into_response());
    }
    if let Some(v) = form.get("new_action")
        && ["all_reviewers", "assigned_only", "none"].contains(&v)
    {
        page.new_action = audience_name(match v {
            "assigned_only" => NewActionAudience::AssignedOnly,
            "none" => NewActionAudience::None,
            _ => NewActionAudience::AllReviewers,
        });
    }
    page.email_enabled = form.get("email_enabled") == Some("on");
    page.minutes = form
        .get("expiry_warning_minutes")
        .unwrap_or_default()
        .to_owned();
    let ticked: Vec<&str> = form.all("mandatory").collect();
    for row in &mut page.mandatory {
        row.checked = ticked.contains(&row.name);
    }
    page.field_errors = field_errors(&e);
    page.error = Some(format!("Not saved: {}", e.message));
    Ok((e.code.status(), page).into_response())
}
