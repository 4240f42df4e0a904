//! The signed-in person's views: the inbox (GET /v1/me/actions).

use axum::Json;
use axum::extract::State;

use crate::app::AppState;
use crate::error::Result;
use crate::http::api::wire::List;
use crate::http::api::wire::actions::ActionOut;
use crate::http::auth::UserAuth;
use crate::http::extract::ApiQuery;
use crate::service::inbox::{self, InboxParams};

/// List Actions for the inbox of the active workspace.
#[utoipa::path(get, path = "/v1/me/actions", tag = "actions", params(InboxParams),
    responses((status = 200, description = "the Actions, most pressing first", body = List<ActionOut>), (status = 422, description = "VALIDATION_ERROR", body = crate::http::openapi::ErrorBody)),
    security(("user_token" = []), ("session_cookie" = [])))]
pub async fn list_my_actions(
    State(st): State<AppState>,
    UserAuth(user): UserAuth,
    ApiQuery(p): ApiQuery<InboxParams>,
) -> Result<Json<List<ActionOut>>> {
    let (rows, has_more) = inbox::list(&st.services, user, p, st.services.clock.now()).await?;
    Ok(Json(List::new(
        rows.iter().map(ActionOut::from).collect(),
        has_more,
    )))
}
