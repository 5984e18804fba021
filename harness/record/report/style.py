"""The page's stylesheet, inlined in its head: the page may load nothing."""

from __future__ import annotations

from harness.record.report.safe import Html

CSS = Html(
    """
:root{--ink:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#f6f8fa;--pass:#1a7f37;
--pass-bg:#dafbe1;--fail:#cf222e;--fail-bg:#ffebe9;--warn:#9a6700;--warn-bg:#fff8c5;
--info:#0969da;--info-bg:#ddf4ff}
*{box-sizing:border-box}
body{margin:0;color:var(--ink);background:#fff;font:14px/1.45 system-ui,-apple-system,
"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:24px 28px 48px}
code{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace}
.wrap{overflow-wrap:anywhere}.small{font-size:11.5px}.muted{color:var(--muted)}
.text{white-space:pre-wrap;overflow-wrap:anywhere}
h1{font-size:26px;margin:2px 0 6px}h1 code{font-size:inherit}h2{font-size:18px;margin:32px 0 10px;
padding-bottom:4px;border-bottom:1px solid var(--line)}
.kicker{margin:0;color:var(--muted);text-transform:uppercase;letter-spacing:.08em;font-size:12px}
.verify{display:inline-block;margin:4px 0 14px;padding:4px 10px;border-radius:6px;
background:var(--pass-bg);color:var(--pass);font-weight:600}
.verify.unverified{background:var(--warn-bg);color:var(--warn)}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;vertical-align:top;padding:5px 8px}
.facts{width:auto;min-width:60%}.facts th{color:var(--muted);font-weight:500;white-space:nowrap;
padding-right:18px}
.budget{width:auto;min-width:60%;margin-bottom:12px}
.budget th,.budget td,.entries th,.entries td,.timeline th,.timeline td{border-bottom:1px solid var(--line)}
thead th{background:var(--soft);font-size:12px;color:var(--muted);text-transform:uppercase;
letter-spacing:.04em}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.bar{display:inline-block;width:140px;height:9px;background:var(--soft);border:1px solid var(--line);
border-radius:5px;overflow:hidden;vertical-align:middle}
.bar .fill{display:block;height:100%}
.fill.tone-ok{background:var(--info)}.fill.tone-fail{background:var(--fail)}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;
white-space:nowrap;border:1px solid transparent}
.tone-pass{background:var(--pass-bg);color:var(--pass);border-color:#aceebb}
.tone-ok{background:var(--soft);color:var(--ink);border-color:var(--line)}
.tone-fail{background:var(--fail-bg);color:var(--fail);border-color:#ffcecb}
.tone-warn{background:var(--warn-bg);color:var(--warn);border-color:#f5e0a0}
.tone-info{background:var(--info-bg);color:var(--info);border-color:#b6e3ff}
.tone-neutral{background:var(--soft);color:var(--muted);border-color:var(--line)}
.containment{display:block;font-size:11px;color:var(--muted)}.uncontained{color:var(--warn)}
.egress{margin-top:4px;font-size:11px}.egress caption{text-align:left;color:var(--muted)}.egress-denied td{color:var(--fail)}
.tag{white-space:nowrap;font-size:11px;color:var(--warn);border:1px solid #f5e0a0;border-radius:4px;padding:0 4px}
.timeline td:nth-child(2),.entries td:nth-child(2){color:var(--muted);white-space:nowrap}
.timeline thead th:last-child{width:38%}
.iteration-title th{background:#eef1f4;font-size:13px;border-top:2px solid var(--line)}
.step-cutoff td{background:#fffdf0}
.event td{background:#fbfbfc}
.folded td{text-align:center;color:var(--muted);font-style:italic;background:var(--soft)}
.paths{margin:2px 0 0;padding-left:16px;font:11.5px ui-monospace,monospace;color:var(--muted)}
.signers{margin:0;padding:0;list-style:none}.signer{white-space:nowrap}
th.num{text-align:right}
#budget-chart{display:block;margin:8px 0 0;font:12px system-ui,sans-serif}
#budget-chart .used{fill:none;stroke:var(--info);stroke-width:2.2}
#budget-chart circle.used{fill:var(--info);stroke:none}
#budget-chart .limit{fill:none;stroke:var(--fail);stroke-width:1.6;stroke-dasharray:6 4}
#budget-chart .grid{stroke:#e6eaef}#budget-chart .axis{fill:none;stroke:#8c959f}
#budget-chart .tick,#budget-chart .axis-label,#budget-chart .legend text{fill:var(--muted)}
#budget-chart .panel-title{font-weight:600;fill:var(--ink)}
#budget-chart .limit-label{fill:var(--fail);font-size:11px}
#budget-chart .note{fill:var(--muted);font-size:16px}
pre.block,pre.diff{margin:4px 0 10px;padding:8px 10px;background:var(--soft);border:1px solid var(--line);
border-radius:6px;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-x:auto}
pre.diff{white-space:pre}pre.diff span{display:block}
pre.diff .add{background:var(--pass-bg);color:#116329}pre.diff .del{background:var(--fail-bg);color:#82071e}
pre.diff .hunk{color:var(--info)}pre.diff .file{font-weight:600}pre.diff .more{color:var(--muted);font-style:italic}
.iteration-evidence{border-top:1px solid var(--line);padding-top:4px}
.iteration-evidence h3{font-size:15px;margin:12px 0 4px}.iteration-evidence h4{font-size:13px;margin:8px 0 2px}
.iteration-evidence ul{margin:4px 0;padding-left:18px}
#sign-command{font-size:14px;padding:2px 6px;background:var(--warn-bg);border-radius:4px}
footer{margin-top:36px;color:var(--muted);font-size:12px}
@media print{body{font-size:10pt}main{max-width:none;padding:0}
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}
tr,svg{break-inside:avoid}h2{break-after:avoid}}
@page{margin:12mm}
"""
)
