//! The server-rendered dashboard: askama pages under `/app`, embedded assets
//! under `/static`. Every page works without JavaScript; `static/app.js` only
//! adds live inbox updates, the header bell's live count, keyboard
//! navigation and an in-page confirm dialog.
//! Handlers call the same services as `/v1`, so both surfaces apply one set of
//! rules. Not part of the OpenAPI document.

mod account;
mod action;
mod action_answer;
mod action_controls;
mod action_view;
mod action_work;
mod analytics;
mod assets;
mod billing;
mod emails;
mod guide;
mod inbox;
mod inbox_batch;
mod invitations;
pub mod markdown;
mod notification_settings;
mod notifications;
mod runs;
mod shown_once;
mod signin;
mod source;
mod source_keys;
mod sources;
mod unsubscribe;
pub(crate) mod view;
mod workspaces;

use axum::Router;
use axum::routing::{get, post};
pub use invitations::CONTINUE as INVITATIONS_CONTINUE;

use crate::app::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/static/{*path}", get(assets::serve_asset))
        // signing in and out
        .route("/app/signin", get(signin::signin_form))
        .route(
            "/app/signin/link/{token}",
            get(signin::link_form).post(signin::redeem_link),
        )
        .route("/app/signin/email", post(signin::mail_link))
        .route("/app/signout", post(signin::sign_out))
        // the guide (guide: "The dashboard"), open to everyone like /v1/docs
        .route("/app/guide", get(guide::guide_page))
        // inbox
        .route("/app", get(inbox::inbox_page))
        .route("/app/inbox/rows", get(inbox::inbox_rows))
        .route("/app/inbox/decide", post(inbox_batch::decide_batch))
        .route("/app/events", get(inbox::inbox_events))
        // one Action
        .route("/app/actions/{id}", get(action::action_page))
        .route("/app/actions/{id}/decide", post(action::decide_action))
        .route("/app/actions/{id}/claim", post(action_work::claim))
        .route("/app/actions/{id}/assign", post(action_work::assign))
        .route("/app/actions/{id}/snooze", post(action_work::snooze))
        .route("/app/actions/{id}/withdraw", post(action_work::withdraw))
        .route("/app/actions/{id}/comments", post(action_work::comment))
        .route(
            "/app/actions/{id}/comments/{comment_id}/edit",
            post(action_work::edit_comment),
        )
        .route(
            "/app/actions/{id}/comments/{comment_id}/delete",
            post(action_work::delete_comment),
        )
        .route(
            "/app/actions/{id}/controls",
            post(action_controls::press_control),
        )
        .route(
            "/app/actions/{id}/context-requests",
            post(action_controls::ask_for_context),
        )
        .route(
            "/app/actions/{id}/requests",
            get(action_controls::requests_fragment),
        )
        .route(
            "/app/actions/{id}/receipt.json",
            get(action::download_receipt),
        )
        // Sources
        .route(
            "/app/sources",
            get(sources::sources_page).post(sources::create_source),
        )
        .route("/app/sources/{id}", get(source::source_page))
        .route("/app/settings/emails", get(emails::emails_page))
        .route(
            "/app/sources/{id}/deliveries/{delivery_id}",
            get(source::delivery_page),
        )
        .route(
            "/app/sources/{id}/deliveries/{delivery_id}/resend",
            post(source::resend_delivery),
        )
        .route("/app/sources/{id}/rotate", post(source_keys::rotate_source))
        .route("/app/sources/{id}/revoke", post(sources::revoke_source))
        // workspaces and members (guide: "Workspaces and members")
        .route(
            "/app/workspaces",
            get(workspaces::workspaces_page).post(workspaces::create_workspace),
        )
        .route("/app/workspaces/select", post(workspaces::select_workspace))
        .route("/app/members", get(workspaces::members_page))
        .route("/app/members/{id}/role", post(workspaces::change_role))
        .route("/app/members/{id}/remove", post(workspaces::remove_member))
        // invitations (guide: "Invitations"): managing them, and the link's page
        .route(
            "/app/invitations",
            get(invitations::invitations_page).post(invitations::create_invitation),
        )
        .route(
            "/app/invitations/{id}/revoke",
            post(invitations::revoke_invitation),
        )
        .route(invitations::CONTINUE, get(invitations::continue_page))
        .route(
            "/app/invitations/{token}",
            get(invitations::accept_page).post(invitations::accept_invitation),
        )
        // the one-click unsubscribe link of notification mails (guide: "E-mail")
        .route(
            "/app/unsubscribe/{token}",
            get(unsubscribe::unsubscribe_page).post(unsubscribe::unsubscribe),
        )
        // notifications (guide: "Notifications in the dashboard")
        .route("/app/notifications", get(notifications::notifications_page))
        .route(
            "/app/notifications/read-all",
            post(notifications::read_all_notifications),
        )
        .route(
            "/app/notifications/{id}/read",
            post(notifications::read_notification),
        )
        .route(
            "/app/settings/notifications",
            get(notification_settings::preferences_page)
                .post(notification_settings::save_preferences),
        )
        .route(
            "/app/settings/notification-policy",
            get(notification_settings::policy_page).post(notification_settings::save_policy),
        )
        // billing (guide: "Plans and billing")
        .route("/app/billing", get(billing::billing_page))
        .route("/app/billing/portal", post(billing::open_portal))
        .route("/app/billing/checkout", post(billing::start_checkout))
        // analytics (guide: "Analytics")
        .route("/app/analytics", get(analytics::analytics_page))
        // account
        .route("/app/runs", get(runs::runs_page))
        .route("/app/runs/{id}", get(runs::run_page))
        .route("/app/runs/{id}/live", get(runs::run_fragment))
        .route("/app/runs/{id}/cancel", post(runs::cancel_run))
        .route("/app/account", get(account::account_page))
        .route("/app/account/tokens", post(account::create_token))
        .route("/app/account/name", post(account::set_name))
        .route("/app/account/delete", post(account::delete_account))
        .route(
            "/app/account/sessions/end-others",
            post(account::end_other_sessions),
        )
        .route(
            "/app/account/credentials/{id}/revoke",
            post(account::revoke_credential),
        )
}
