//! `--format html` on the producer fixtures: the producers table names the holders of a
//! duplicate from the fixture's truth (what was sent, not what pidshark says) and links
//! to block bars that exist in the page; the controller lane draws one band per span of
//! the JSON report's `controllers`; and the page stays self-contained.

use scraper::{Html, Selector};
use serde_json::Value;

use crate::common::{pidshark, report, root};

fn truth(name: &str) -> Value {
    let path = root().join(format!("fixtures/producers/{name}.truth.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The capture and its server ports (`--port`), as tests/it/producers.rs runs them.
fn args(name: &str) -> Vec<String> {
    let mut args = vec![format!("fixtures/producers/{name}.pcap")];
    let ports = truth(name)["ports"].as_array().expect("ports").clone();
    args.extend(ports.iter().map(|p| format!("--port={p}")));
    args
}

fn page(name: &str) -> String {
    let out = pidshark()
        .args(args(name))
        .args(["--format", "html"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

fn select(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}

fn text(el: scraper::ElementRef<'_>) -> String {
    el.text().collect::<Vec<_>>().join(" ")
}

/// No script, no stylesheet or image fetched, no address but SVG's namespace.
fn assert_self_contained(html: &str) {
    assert!(!html.contains("<script"));
    assert!(!html.contains("<link"));
    assert!(!html.contains("<img"));
    assert_eq!(
        html.matches("http").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
}

#[test]
fn the_producers_table_names_both_holders_of_the_duplicate_and_links_to_their_blocks() {
    let truth = truth("kafka-20031");
    assert_eq!(
        truth["ports"].as_array().unwrap().len(),
        3,
        "--port=19093 --port=19201 --port=19202"
    );
    let duplicate = &truth["expected"]["pid_duplicate_grants"][0];
    let html = page("kafka-20031");
    let doc = Html::parse_document(&html);
    let rows: Vec<_> = doc.select(&select("table#producers tr.producer")).collect();
    assert!(!rows.is_empty(), "no producers table");
    for holder in duplicate["holders"].as_array().unwrap() {
        let client = holder["client"].as_str().unwrap();
        let frame = holder["response_frame"].as_u64().unwrap();
        let row = rows
            .iter()
            .find(|r| text(**r).contains(client))
            .unwrap_or_else(|| panic!("no row for {client}"));
        let cells: Vec<String> = row.select(&select("td")).map(text).collect();
        assert_eq!(cells[0], duplicate["producer_id"].to_string(), "{cells:?}");
        assert_eq!(
            cells[1],
            duplicate["producer_epoch"].to_string(),
            "{cells:?}"
        );
        assert_eq!(row.value().id(), Some(format!("producer-{frame}").as_str()));
        // the link to the block: a bar of the timeline holding the id, of this block
        let link = row
            .select(&select("a[href^='#block-']"))
            .next()
            .unwrap_or_else(|| panic!("{client}: no link to a block"));
        let target = link.value().attr("href").unwrap().trim_start_matches('#');
        let bar = doc
            .select(&select(&format!("svg#timeline rect.block[id='{target}']")))
            .next()
            .unwrap_or_else(|| panic!("{client}: no bar #{target}"));
        let start = holder["block_start"].as_i64().unwrap();
        let title = text(bar);
        assert!(title.contains(&format!("ids {start}..=")), "{title}");
        assert!(link
            .text()
            .collect::<String>()
            .starts_with(&format!("{start}..")));
    }
    // the later holder says whose id it got, and links to that row
    let [first, later] = [0, 1].map(|i| &duplicate["holders"][i]);
    let later_row = rows
        .iter()
        .find(|r| text(**r).contains(later["client"].as_str().unwrap()))
        .unwrap();
    let earlier = first["response_frame"].as_u64().unwrap();
    let link = later_row
        .select(&select(&format!("a[href='#producer-{earlier}']")))
        .next()
        .expect("a link to the earlier holder's row");
    assert_eq!(text(link), format!("duplicate of frame {earlier}"));
    let later_frame = later["response_frame"].as_u64().unwrap();
    let first_row = doc
        .select(&select(&format!("tr#producer-{earlier}")))
        .next()
        .unwrap();
    let link = first_row
        .select(&select(&format!("a[href='#producer-{later_frame}']")))
        .next()
        .expect("a link to the later holder's row");
    assert_eq!(text(link), format!("granted again in frame {later_frame}"));
    // the counts: every exchange the truth says was sent, each granted
    let counts = text(doc.select(&select("p#producer-counts")).next().unwrap());
    let sent = truth["producer_ids"].as_array().unwrap();
    let granted = sent.iter().filter(|p| p["granted"] == true).count();
    assert!(
        counts.starts_with(&format!("{} InitProducerId exchanges", sent.len())),
        "{counts}"
    );
    assert!(
        counts.contains(&format!("{granted} granted an id")),
        "{counts}"
    );
    let placements = text(doc.select(&select("p#placements")).next().unwrap());
    assert!(placements.contains("1 granted twice"), "{placements}");
    assert_self_contained(&html);
}

#[test]
fn the_controller_lane_draws_a_band_per_piece_of_the_report() {
    let args = args("stale-controller");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let pieces = report(&args)["controller_timeline"]
        .as_array()
        .unwrap()
        .clone();
    assert!(pieces.iter().any(|p| p["state"] == "led"), "{pieces:?}");
    let html = page("stale-controller");
    let doc = Html::parse_document(&html);
    let bands: Vec<_> = doc.select(&select("svg#timeline g.controller")).collect();
    assert_eq!(bands.len(), pieces.len(), "a band per piece");
    let mut full_labels = 0;
    for (band, piece) in bands.iter().zip(&pieces) {
        let title = text(band.select(&select("title")).next().unwrap());
        // a band too narrow for its label has a shorter one, or none (its title says all)
        let label = band.select(&select("text")).next().map(text);
        let from = piece["from_timestamp"].as_str().unwrap();
        let to = piece["to_timestamp"].as_str().unwrap();
        assert!(title.contains(&format!("from {from} (")), "{title}");
        assert!(title.contains(&format!(") to {to} (")), "{title}");
        match piece["state"].as_str().unwrap() {
            "led" => {
                let said = format!(
                    "controller {} proven to lead in epoch {}",
                    piece["leader_id"], piece["epoch"]
                );
                assert!(title.starts_with(&said), "{title} / {said}");
                let (id, epoch) = (&piece["leader_id"], &piece["epoch"]);
                let full = format!("leader {id} epoch {epoch}");
                let shorter = [format!("{id} e{epoch}"), id.to_string()];
                match label {
                    Some(l) if l == full => full_labels += 1,
                    Some(l) => assert!(shorter.contains(&l), "{l}"),
                    None => {}
                }
            }
            _ => {
                assert!(title.starts_with("who led is unknown"), "{title}");
                assert!(matches!(label.as_deref(), Some("unknown" | "?") | None));
            }
        }
    }
    assert!(full_labels > 0, "a led band wide enough is named in full");
    let svg_title = text(doc.select(&select("svg#timeline > title")).next().unwrap());
    assert!(
        svg_title.contains("of a controller proven to lead the quorum"),
        "{svg_title}"
    );
    assert_self_contained(&html);
}

#[test]
fn a_capture_without_init_producer_id_has_no_producers_part() {
    let out = pidshark()
        .args(["fixtures/analysis/overlap.pcap", "--format", "html"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let html = String::from_utf8(out).unwrap();
    assert!(!html.contains("Producers (InitProducerId)"));
    assert!(!html.contains("class=\"controller\""));
    assert!(!html.contains("id=\"block-"));
}
