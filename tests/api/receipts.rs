//! Receipts verify with an independent JOSE implementation (PyJWT), survive key
//! rotation, form a chain, and fail `hds verify-receipt` when altered. The
//! fingerprint is recomputed with an independent RFC 8785 implementation.

use std::process::Command;

use serde_json::json;

use crate::helpers::{TestApp, python, two_options};

fn hds(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hds"))
        .args(args)
        .output()
        .unwrap()
}

/// `hds verify-receipt` on `file` written as `{case}.json` in `dir`,
/// against the JWKS at `keys`: its exit code and what it printed.
fn verify_file(
    dir: &std::path::Path,
    keys: &std::path::Path,
    case: &str,
    file: &serde_json::Value,
) -> (Option<i32>, String) {
    let f = dir.join(format!("{case}.json"));
    std::fs::write(&f, file.to_string()).unwrap();
    let out = hds(&[
        "verify-receipt",
        f.to_str().unwrap(),
        "--keys",
        keys.to_str().unwrap(),
    ]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

async fn decided(app: &TestApp, title: &str) -> serde_json::Value {
    let a = app.create_action(two_options(title)).await;
    app.decide(&a, json!({"option_id": "approve", "reason": "ok"}))
        .await
        .ok(200)["data"]
        .clone()
}

#[tokio::test]
async fn receipts_verify_with_pyjwt_before_and_after_key_rotation() {
    let app = TestApp::spawn().await;
    let old = decided(&app, "first").await;
    let data_dir = app.data_dir();
    let out = hds(&["keys", "rotate", "--data-dir", data_dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let new = decided(&app, "second").await;
    assert_ne!(old["receipt"]["kid"], new["receipt"]["kid"]);

    let jwks = app.get("/v1/receipts/keys", "unused").await;
    let statuses: Vec<&str> = jwks.body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["retired", "active"]);
    let verified = python(
        "verify_receipt.py",
        &json!({
            "jwks": jwks.body,
            "receipts": [old["receipt"]["jws"], new["receipt"]["jws"]],
        }),
    );
    let lines: Vec<serde_json::Value> = verified
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["sub"], old["id"]);
    assert_eq!(lines[1]["sub"], new["id"]);
    // The chain: seq 1, 2 and prev = sha256 of the previous compact JWS.
    assert_eq!(
        (lines[0]["seq"].clone(), lines[1]["seq"].clone()),
        (json!(1), json!(2))
    );
    assert_eq!(lines[0]["prev"], serde_json::Value::Null);
    let prev = hex::encode(sha2::Sha256::digest(
        old["receipt"]["jws"].as_str().unwrap().as_bytes(),
    ));
    assert_eq!(lines[1]["prev"], prev);

    // hds verify-receipt: both valid offline against the published JWKS …
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.json");
    std::fs::write(&keys, jwks.body.to_string()).unwrap();
    for a in [&old, &new] {
        let (code, said) = verify_file(dir.path(), &keys, "action", a);
        assert_eq!(code, Some(0), "{said}");
    }
    // … and one changed character makes it invalid, exit 1, with the reason.
    let jws = new["receipt"]["jws"].as_str().unwrap();
    let dot = jws.find('.').unwrap() + 10;
    let mut tampered = jws.to_owned().into_bytes();
    tampered[dot] = if tampered[dot] == b'A' { b'B' } else { b'A' };
    let f = dir.path().join("tampered.jws");
    std::fs::write(&f, &tampered).unwrap();
    let out = hds(&[
        "verify-receipt",
        f.to_str().unwrap(),
        "--keys",
        keys.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("invalid:"), "{said}");

    // A key set whose keys are published for another algorithm or purpose
    // is no basis for a verdict: exit 2, naming what is wrong.
    for (member, value) in [("alg", "RS256"), ("use", "enc"), ("kty", "RSA")] {
        let mut other = jwks.body.clone();
        for k in other["keys"].as_array_mut().unwrap() {
            k[member] = json!(value);
        }
        let f = dir.path().join(format!("keys-{member}.json"));
        std::fs::write(&f, other.to_string()).unwrap();
        let receipt = dir.path().join("new.json");
        std::fs::write(&receipt, new.to_string()).unwrap();
        let out = hds(&[
            "verify-receipt",
            receipt.to_str().unwrap(),
            "--keys",
            f.to_str().unwrap(),
        ]);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{member}: {said}");
        assert!(
            said.contains(&format!("has {member} \"{value}\", not")),
            "{member}: {said}"
        );
    }

    // An Action whose shown content or answer differs from what its valid
    // receipt signs is invalid too: a changed title (its fingerprint no
    // longer matches), another Action's receipt, another answer.
    let mut retitled = new.clone();
    retitled["title"] = json!("Something else entirely");
    let mut swapped = old.clone();
    swapped["receipt"] = new["receipt"].clone();
    let mut answered = new.clone();
    answered["resolution_option_id"] = json!("reject");
    let mut repaid = new.clone();
    repaid["receipt"]["payload"]["decision"]["option_id"] = json!("reject");
    let mut rewho = new.clone();
    rewho["resolved_by"] = json!({"type": "user", "id": "usr_someone_else"});
    let mut untitled = new.clone();
    untitled.as_object_mut().unwrap().remove("title");
    untitled["decision_context"] = json!({"x": 99});
    let mut reasoned = new.clone();
    reasoned["resolution_reason"] = json!("approved by the board");
    // Showing a signed field as null, dropping the Action's identity, or a
    // status other than resolved is refused too.
    let mut nulled = new.clone();
    nulled["resolution_option_id"] = json!(null);
    let mut unwho = new.clone();
    unwho["resolved_by"] = json!(null);
    let mut anonymous = new.clone();
    anonymous.as_object_mut().unwrap().remove("id");
    let mut reopened = new.clone();
    reopened["status"] = json!("open");
    // Another Action shown without a receipt, beside a valid receipt at the
    // top (as an `action.cancelled` body with someone else's `jws`): the
    // receipt is not that Action's.
    let mut bare = old.clone();
    bare["receipt"] = json!(null);
    let mixed = json!({"jws": jws, "data": bare.clone()});
    let mixed_hook =
        json!({"jws": jws, "type": "action.cancelled", "data": {"action": bare.clone()}});
    // …or the file itself an Action with another's `jws` at its top, or a
    // list beside it, or the Action in a webhook body beside another one.
    let mut top = bare.clone();
    top["jws"] = json!(jws);
    top.as_object_mut().unwrap().remove("id");
    let listed = json!({"jws": jws, "data": [bare.clone()]});
    let hook_beside = json!({"type": "action.resolved", "timestamp": "2026-11-28T00:00:00.000Z",
        "data": {"action": new.clone(), "other": bare.clone()}});
    let response_beside = json!({"data": new.clone(), "action": bare});
    // A receipt object whose `alg` is not the one its JWS is signed with.
    let mut unsigned_alg = new["receipt"].clone();
    unsigned_alg["alg"] = json!("none");
    for (case, file, why) in [
        ("mixed", &mixed, "such a file does not hold"),
        ("mixed_hook", &mixed_hook, "such a file does not hold"),
        ("top", &top, "such a file does not hold"),
        ("listed", &listed, "such a file does not hold"),
        ("hook_beside", &hook_beside, "member `other`"),
        ("response_beside", &response_beside, "member `action`"),
        ("unsigned_alg", &unsigned_alg, "receipt alg"),
        ("nulled", &nulled, "resolution_option_id"),
        ("unwho", &unwho, "resolved_by"),
        ("anonymous", &anonymous, "without its id"),
        ("reopened", &reopened, "status"),
        ("rewho", &rewho, "resolved_by"),
        ("untitled", &untitled, "fingerprint"),
        ("reasoned", &reasoned, "resolution_reason"),
        ("retitled", &retitled, "fingerprint"),
        ("swapped", &swapped, "Action id"),
        ("answered", &answered, "resolution_option_id"),
        ("repaid", &repaid, "receipt payload"),
    ] {
        let (code, said) = verify_file(dir.path(), &keys, case, file);
        assert_eq!(code, Some(1), "{case}: {said}");
        assert!(
            said.starts_with("invalid:") && said.contains(why),
            "{case}: {said}"
        );
    }
    // Numbers written another way (`5` for `5.0`, as JavaScript writes
    // them back) are the same JSON: still valid.
    let mut rewritten = new.clone();
    rewritten["receipt"]["payload"]["action_version"] = json!(
        new["receipt"]["payload"]["action_version"]
            .as_i64()
            .unwrap() as f64
    );
    rewritten["action_version"] = json!(new["action_version"].as_i64().unwrap() as f64);
    let (code, said) = verify_file(dir.path(), &keys, "rewritten", &rewritten);
    assert_eq!(code, Some(0), "{said}");
    // A key set saved before the key was made.
    let stale = dir.path().join("stale-jwks.json");
    let mut older = jwks.body.clone();
    let signed_by = new["receipt"]["kid"].clone();
    older["keys"]
        .as_array_mut()
        .unwrap()
        .retain(|k| k["kid"] != signed_by);
    std::fs::write(&stale, older.to_string()).unwrap();
    let f = dir.path().join("action-stale.json");
    std::fs::write(&f, new.to_string()).unwrap();
    let out = hds(&[
        "verify-receipt",
        f.to_str().unwrap(),
        "--keys",
        stale.to_str().unwrap(),
    ]);
    // A key nobody published is what a forgery names: a verdict (exit 1),
    // with the way to rule out a stale file.
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("fetch the keys again"), "{said}");

    // The keys may be given by their URL, as the server publishes them.
    let f = dir.path().join("action.json");
    std::fs::write(&f, new.to_string()).unwrap();
    let url = format!("{}/v1/receipts/keys", app.base);
    let out = tokio::task::spawn_blocking({
        let f = f.clone();
        move || hds(&["verify-receipt", f.to_str().unwrap(), "--keys", &url])
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Without a verdict — the file or the keys cannot be read — it says so
    // on stderr and exits 2, never `invalid:` (a forgery) or `valid:`.
    let missing = dir.path().join("no-such.json");
    let down = "http://127.0.0.1:9/v1/receipts/keys".to_owned();
    let empty = dir.path().join("empty-jwks.json");
    std::fs::write(&empty, r#"{"keys": []}"#).unwrap();
    let partial = dir.path().join("partial-jwks.json");
    std::fs::write(&partial, r#"{"keys": [{"kty": "OKP"}]}"#).unwrap();
    for args in [
        vec![
            "verify-receipt".to_owned(),
            missing.to_str().unwrap().to_owned(),
            "--keys".into(),
            keys.to_str().unwrap().to_owned(),
        ],
        vec![
            "verify-receipt".to_owned(),
            f.to_str().unwrap().to_owned(),
            "--keys".into(),
            down.clone(),
        ],
        vec![
            "verify-receipt".to_owned(),
            f.to_str().unwrap().to_owned(),
            "--keys".into(),
            missing.to_str().unwrap().to_owned(),
        ],
        vec![
            "verify-receipt".to_owned(),
            f.to_str().unwrap().to_owned(),
            "--keys".into(),
            empty.to_str().unwrap().to_owned(),
        ],
        vec![
            "verify-receipt".to_owned(),
            f.to_str().unwrap().to_owned(),
            "--keys".into(),
            partial.to_str().unwrap().to_owned(),
        ],
    ] {
        let out = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            hds(&args)
        })
        .await
        .unwrap();
        let (said, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(2), "{said}{err}");
        assert!(said.is_empty(), "{said}");
        assert!(
            err.starts_with("error: could not check the receipt:"),
            "{err}"
        );
    }
    // A file that is not text holds no receipt: invalid, exit 1.
    let binary = dir.path().join("binary.bin");
    std::fs::write(&binary, [0xff_u8, 0xfe, 0x00, 0x01]).unwrap();
    let out = hds(&[
        "verify-receipt",
        binary.to_str().unwrap(),
        "--keys",
        keys.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("invalid:"));
}

use sha2::Digest;

#[tokio::test]
async fn fingerprint_recomputed_with_an_independent_jcs_matches() {
    let app = TestApp::spawn().await;
    let a = app
        .create_action(json!({
            "title": "Ünïcödé déploy 🚀", "description": "line1\nline2 \"quoted\"",
            "interaction": {"type": "number", "min": 0.5, "max": 1e3},
            "context": [{"type": "kv", "items": [{"key": "z", "value": "last"}, {"key": "a", "value": "first"}]}, {"type": "code", "code": "<b>&</b>", "language": "html"}],
            "decision_class": "deploy", "decision_context": {"b": [3, 2.5, -0.0], "a": {"nested": true}},
            "controls": [{"key": "logs", "label": "Logs", "kind": "link", "url": "https://logs.example.com"}],
            "open_url": "https://ci.example.com/1", "metadata": {"not": "material"},
        }))
        .await;
    assert_eq!(
        python("fingerprint.py", &a),
        a["fingerprint"].as_str().unwrap()
    );
    let patched = app
        .patch(
            &format!("/v1/actions/{}", a["id"].as_str().unwrap()),
            &app.live_key(),
            json!({"title": "Another"}),
        )
        .await;
    let p = patched.ok(200)["data"].clone();
    assert_eq!(
        python("fingerprint.py", &p),
        p["fingerprint"].as_str().unwrap()
    );
    let o = app.create_action(two_options("options form")).await;
    assert_eq!(
        python("fingerprint.py", &o),
        o["fingerprint"].as_str().unwrap()
    );
}

#[tokio::test]
async fn jwks_is_cacheable_with_an_etag() {
    let app = TestApp::spawn().await;
    let r = app
        .call(reqwest::Method::GET, "/v1/receipts/keys", None, None, &[])
        .await;
    r.ok(200);
    assert_eq!(r.headers["cache-control"], "public, max-age=300");
    let k = &r.body["keys"][0];
    assert_eq!(
        (
            k["kty"].as_str(),
            k["crv"].as_str(),
            k["alg"].as_str(),
            k["use"].as_str()
        ),
        (Some("OKP"), Some("Ed25519"), Some("EdDSA"), Some("sig"))
    );
    let etag = r.headers["etag"].to_str().unwrap().to_owned();
    let again = app
        .call(
            reqwest::Method::GET,
            "/v1/receipts/keys",
            None,
            None,
            &[("if-none-match", etag.as_str())],
        )
        .await;
    assert_eq!(again.status.as_u16(), 304);
    // Weak comparison (RFC 9110): a `W/` tag, or `*`, matches too; another
    // tag does not.
    let weak = format!("W/{etag}");
    for (sent, status) in [(weak.as_str(), 304), ("*", 304), (r#""other", W/"x""#, 200)] {
        let r = app
            .call(
                reqwest::Method::GET,
                "/v1/receipts/keys",
                None,
                None,
                &[("if-none-match", sent)],
            )
            .await;
        assert_eq!(r.status.as_u16(), status, "{sent}");
    }
}

/// The receipt card's commands, run as shown: the first saves the server's
/// keys (fetched here over HTTP, as `curl` would), the second is run with the
/// built `hds` in the folder holding the downloaded receipt and keys.json.
#[tokio::test]
async fn the_receipt_cards_commands_verify_the_receipt_as_copied() {
    let app = TestApp::spawn().await;
    let a = decided(&app, "Ship it").await;
    let id = a["id"].as_str().unwrap();
    let browser = app.browser(app.admin().person()).await;
    let page = browser.page(&format!("/app/actions/{id}")).await;
    let start = page
        .find("<pre class=\"block\" id=\"receipt-verify\"><code>")
        .expect("the commands")
        + "<pre class=\"block\" id=\"receipt-verify\"><code>".len();
    let shown = page[start..].split("</code></pre>").next().unwrap();
    let shown = shown.replace("&gt;", ">").replace("&amp;", "&");
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines.len(), 2, "{shown}");
    let keys_url = format!("{}/v1/receipts/keys", app.base);
    assert_eq!(lines[0], format!("curl -sS {keys_url} > keys.json"));

    let dir = tempfile::tempdir().unwrap();
    let curl = crate::helpers::client_builder().build().unwrap();
    let keys = curl.get(&keys_url).send().await.unwrap();
    assert_eq!(keys.status(), 200);
    let keys = keys.bytes().await.unwrap();
    std::fs::write(dir.path().join("keys.json"), &keys).unwrap();
    let download = browser
        .http()
        .get(browser.url(&format!("/app/actions/{id}/receipt.json")))
        .send()
        .await
        .unwrap();
    let disposition = download.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_owned();
    let file = disposition.split('"').nth(1).unwrap().to_owned();
    std::fs::write(dir.path().join(&file), download.bytes().await.unwrap()).unwrap();

    let words: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(words[0], "hds", "{}", lines[1]);
    assert!(words.contains(&file.as_str()), "names the downloaded file");
    let out = Command::new(env!("CARGO_BIN_EXE_hds"))
        .args(&words[1..])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.starts_with("valid: receipt"), "{said}");
}

/// An Action file must show the requester its receipt signs: the same
/// person (by user id, else by e-mail address), or none when the receipt
/// names none. A genuine file verifies, also without the field.
#[tokio::test]
async fn verify_receipt_checks_the_requester_an_action_file_shows() {
    let app = TestApp::spawn().await;
    let requester = app.member(hds::domain::access::Role::Reviewer);
    let mut body = two_options("Requested by a member");
    body["requested_by_email"] = json!(requester.person().email);
    let asked = app.create_action(body).await;
    let with = app
        .decide(&asked, json!({"option_id": "approve"}))
        .await
        .ok(200)["data"]
        .clone();
    assert_eq!(
        with["requested_by"]["user_id"],
        json!(requester.person().id)
    );
    let without = decided(&app, "Nobody asked").await;
    assert_eq!(without["requested_by"], serde_json::Value::Null);

    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.json");
    let jwks = app.get("/v1/receipts/keys", "unused").await;
    std::fs::write(&keys, jwks.body.to_string()).unwrap();
    let verify = |case: &str, file: &serde_json::Value| verify_file(dir.path(), &keys, case, file);

    let mut unnamed = with.clone();
    unnamed.as_object_mut().unwrap().remove("requested_by");
    // As a member who has since left shows: the address, no user id.
    let mut by_address = with.clone();
    by_address["requested_by"]["user_id"] = serde_json::Value::Null;
    by_address["requested_by"]["email"] = json!(requester.person().email.to_uppercase());
    for (case, file) in [
        ("genuine", &with),
        ("no requester", &without),
        ("field left out", &unnamed),
        ("by address", &by_address),
    ] {
        let (code, said) = verify(case, file);
        assert_eq!(code, Some(0), "{case}: {said}");
        assert!(said.starts_with("valid:"), "{case}: {said}");
    }

    let mut dropped = with.clone();
    dropped["requested_by"] = serde_json::Value::Null;
    let mut another = with.clone();
    another["requested_by"]["user_id"] = json!(app.creds["user_id"]);
    let mut other_address = by_address.clone();
    other_address["requested_by"]["email"] = json!("someone-else@example.com");
    let mut added = without.clone();
    added["requested_by"] =
        json!({"user_id": requester.person().id, "email": requester.person().email, "name": null});
    let mut odd = with.clone();
    odd["requested_by"] = json!("admin@example.com");
    let mut nobody = with.clone();
    nobody["requested_by"] = json!({"name": "Mallory"});
    let mut numbered = with.clone();
    numbered["requested_by"]["user_id"] = json!(123);
    for (case, file, why) in [
        ("dropped", &dropped, "the file shows no requester"),
        ("another", &another, "another user id"),
        ("other address", &other_address, "another e-mail address"),
        ("added", &added, "the receipt names no requester"),
        ("odd", &odd, "must be an object or null"),
        ("nobody", &nobody, "neither the user id nor the address"),
        ("numbered", &numbered, "must be strings or null"),
    ] {
        let (code, said) = verify(case, file);
        assert_eq!(code, Some(1), "{case}: {said}");
        assert!(
            said.starts_with("invalid: the file's requested_by") && said.contains(why),
            "{case}: {said}"
        );
    }
}
