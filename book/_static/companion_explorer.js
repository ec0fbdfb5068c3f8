// Static explorers (companion.explorers.static): the figure's slider steps update the figure
// (plotly does that); this swaps the readout beside it to the one computed for that step.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".companion-explorer").forEach(function (box) {
    var gd = document.getElementById(box.dataset.figure);
    var readout = box.querySelector(".companion-explorer-readout");
    function attach() {
      if (!gd || typeof gd.on !== "function") { return setTimeout(attach, 50); }
      gd.on("plotly_sliderchange", function (event) {
        var meta = gd.layout.meta && gd.layout.meta.companion_explorer;
        if (meta) { readout.innerHTML = meta.readouts[event.slider.active]; }
      });
    }
    attach();
  });
});
