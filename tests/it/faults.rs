//! Issue 38, point 6: one fault, one headline finding. The KAFKA-20031 shape planted by
//! `scripts/make-producer-fixtures.py` (broker 1 accepts a block starting at its current
//! block's last id, then two producers are granted that id) is one fault seen three ways:
//! an overlap, a regression and a duplicate grant. Each is linked to the block the script
//! planted (`fault_frame`: its response frame, from the truth), the verdict names the
//! others as the same fault, and the text counts them once.

use serde_json::Value;

use crate::common::{pidshark, report, root};

#[test]
fn findings_of_one_planted_fault_are_linked_to_it_and_counted_once() {
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("fixtures/producers/kafka-20031.truth.json")).unwrap(),
    )
    .unwrap();
    // the planted block: the one that starts at its broker's previous block's last id
    let blocks = truth["blocks"].as_array().unwrap();
    let planted = blocks
        .iter()
        .find(|b| {
            blocks.iter().any(|earlier| {
                earlier["broker_id"] == b["broker_id"] && earlier["end"] == b["start"]
            })
        })
        .expect("the planted block");
    let fault = planted["response_frame"].as_u64().unwrap();
    let r = report(&["fixtures/producers/kafka-20031.pcap"]);
    let findings = r["producer_id_blocks"]["findings"].as_array().unwrap();
    let kinds: Vec<&str> = findings
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "pid_block_overlap",
            "pid_block_regression",
            "pid_duplicate_grant"
        ]
    );
    for f in findings {
        assert_eq!(f["facts"]["fault_frame"], fault, "{f}");
    }
    let headline = r["verdict"]["headline"].as_str().unwrap();
    assert!(
        headline.ends_with(&format!(
            "; the same fault shows as a pid_block_regression (frame {fault}) and a pid_duplicate_grant (frame {})",
            findings[2]["frames"][1]
        )),
        "{headline}"
    );
    let text = pidshark()
        .args(["fixtures/producers/kafka-20031.pcap", "--format", "text"])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("Findings: 3 errors, 0 warnings, 0 info (3 of them restate 1 fault)"),
        "{text}"
    );
}
