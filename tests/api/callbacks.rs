//! `callback_url` at create time: the SSRF address rules (guide: "Callback
//! URLs and private networks") and the normalised form that is stored.

use serde_json::{Value, json};

use crate::helpers::{TestApp, two_options};

fn with_callback(url: &str) -> Value {
    let mut b = two_options("Deploy");
    b["callback_url"] = json!(url);
    b
}

#[tokio::test]
async fn callback_urls_on_non_public_addresses_are_refused_and_nothing_is_created() {
    let app = TestApp::spawn().await;
    let source = app.source();
    for (url, named) in [
        ("https://[::ffff:0:7f00:1]/", "IPv4-translated (RFC 2765)"),
        (
            "https://[64:ff9b:1::a9fe:a9fe]/",
            "local-use NAT64 (RFC 8215)",
        ),
        ("https://[100::1]/", "discard-only (RFC 6666)"),
        (
            "https://[::ffff:127.0.0.1]/",
            "IPv4-mapped 127.0.0.1, loopback",
        ),
        (
            "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
            "Teredo (RFC 4380)",
        ),
        (
            "https://[64:ff9b::a9fe:a9fe]/",
            "NAT64 (RFC 6052) 169.254.169.254",
        ),
        (
            "https://169.254.169.254/latest/meta-data/",
            "cloud metadata",
        ),
        ("https://100.64.0.1/", "carrier-grade NAT (RFC 6598)"),
        ("https://0x7f.1/", "loopback"),
        ("https://[fd00::1]/", "unique-local (RFC 4193)"),
        ("https://[2002:a00:1::]/", "6to4 (RFC 3056) 10.0.0.1"),
        ("https://localhost./", "local name"),
    ] {
        let e = source
            .post_err(
                "/v1/actions",
                with_callback(url),
                400,
                "INVALID_CALLBACK_URL",
            )
            .await;
        let err = &e["details"]["errors"][0];
        assert_eq!(err["field"], "callback_url", "{url}");
        let message = err["message"].as_str().unwrap();
        assert!(message.contains(named), "{url}: {message}");
        assert!(message.contains("public"), "{url}: {message}");
    }
    assert_eq!(app.count_rows("actions"), 0);
}

#[tokio::test]
async fn a_fragment_or_credentials_in_the_callback_url_are_refused() {
    let app = TestApp::spawn().await;
    let source = app.source();
    for (url, named) in [
        ("https://hooks.example.com/hds#top", "fragment"),
        ("https://me:secret@hooks.example.com/hds", "credentials"),
        ("http://hooks.example.com/hds", "https"),
    ] {
        let e = source
            .post_err(
                "/v1/actions",
                with_callback(url),
                400,
                "INVALID_CALLBACK_URL",
            )
            .await;
        let message = e["details"]["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains(named), "{url}: {message}");
    }
    assert_eq!(app.count_rows("actions"), 0);
}

/// The WHATWG parser reads host `example.com` and path `/@127.0.0.1/` from
/// this; another parser would read host 127.0.0.1. hds stores, returns (and
/// will send) the serialisation it checked, so no parser can disagree later.
#[tokio::test]
async fn the_callback_url_is_stored_and_returned_normalised() {
    let app = TestApp::spawn().await;
    let raw = r"https://example.com\@127.0.0.1/";
    let a = app.create_action(with_callback(raw)).await;
    assert_eq!(a["callback_url"], "https://example.com/@127.0.0.1/");
    let fingerprint = a["fingerprint"].clone();

    let id = a["id"].as_str().unwrap();
    let source = app.source();
    let got: Value = source.get(&format!("/v1/actions/{id}"), 200).await;
    assert_eq!(
        got["data"]["callback_url"],
        "https://example.com/@127.0.0.1/"
    );

    // callback_url is not material (guide: "Binding"): the same Action with
    // the raw spelling has the same fingerprint.
    let b = app
        .create_action(with_callback("https://example.com/@127.0.0.1/"))
        .await;
    assert_eq!(b["fingerprint"], fingerprint);

    // A PATCH of another field keeps it as stored.
    let patched: Value = source
        .patch(
            &format!("/v1/actions/{id}"),
            json!({"title": "Deploy now"}),
            200,
        )
        .await;
    assert_eq!(
        patched["data"]["callback_url"],
        "https://example.com/@127.0.0.1/"
    );

    let c = app
        .create_action(with_callback("https://Hooks.Example.COM:443/a/../hds"))
        .await;
    assert_eq!(c["callback_url"], "https://hooks.example.com/hds");
}

#[tokio::test]
async fn allow_private_callbacks_accepts_private_hosts_for_development() {
    let app = TestApp::spawn_with(|c| c.allow_private_callbacks = true).await;
    for (raw, stored) in [
        ("http://127.0.0.1:9000/hook", "http://127.0.0.1:9000/hook"),
        ("https://[::ffff:0:7f00:1]/", "https://[::ffff:0:7f00:1]/"),
        ("https://localhost", "https://localhost/"),
    ] {
        let a = app.create_action(with_callback(raw)).await;
        assert_eq!(a["callback_url"], stored, "{raw}");
    }
    // Credentials and fragments stay refused.
    app.source()
        .post_err(
            "/v1/actions",
            with_callback("http://127.0.0.1/#x"),
            400,
            "INVALID_CALLBACK_URL",
        )
        .await;
}
