// The eval viewer's behaviour: a failing-only filter, and the reviewers'
// feedback (one box per case) exported as feedback.json. The page is
// complete without it; nothing here touches the network.
"use strict";
(function () {
  const boxes = Array.from(document.querySelectorAll("textarea[data-case]"));
  const count = document.getElementById("feedback-count");
  const only = document.getElementById("only-failing");
  const exportButton = document.getElementById("export-feedback");

  function feedback() {
    const stamp = new Date().toISOString();
    return {
      reviews: boxes
        .filter((box) => box.value.trim() !== "")
        .map((box) => ({ run_id: box.dataset.case, feedback: box.value.trim(), timestamp: stamp })),
      status: "complete",
    };
  }

  function showCount() {
    const n = feedback().reviews.length;
    count.textContent = n === 0 ? "no feedback written yet" : n + " case(s) with feedback";
  }

  boxes.forEach((box) => box.addEventListener("input", showCount));

  only.addEventListener("change", () => {
    document.querySelectorAll(".case").forEach((c) => {
      c.classList.toggle("hidden", only.checked && c.dataset.status !== "fail");
    });
  });

  exportButton.addEventListener("click", () => {
    const text = JSON.stringify(feedback(), null, 2) + "\n";
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
    link.download = "feedback.json";
    document.body.appendChild(link);
    link.click();
    link.remove();
  });

  showCount();
})();
