// Static explorers (companion.explorers.static): the figure's slider steps update the figure
// (plotly does that when its own slider is dragged). The range input above the figure is the
// same slider for the keyboard and screen readers: it applies the step it selects (the step's
// own restyle/relayout arguments, exactly what plotly's slider applies) and moves plotly's
// slider with it; either way the readout beside the figure becomes the one computed for that
// step, and a polite live region announces the value and the readout.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".companion-explorer").forEach(function (box) {
    var gd = document.getElementById(box.dataset.figure);
    var readout = box.querySelector(".companion-explorer-readout");
    var range = box.querySelector(".companion-explorer-range");
    var value = box.querySelector(".companion-explorer-value");
    var announce = box.querySelector(".companion-explorer-announce");

    function spoken() {
      // the readout's own words, without the figure notes it carries (read where they are)
      var copy = readout.cloneNode(true);
      copy.querySelectorAll(".companion-figure-notes").forEach(function (n) { n.remove(); });
      return copy.textContent.replace(/\s+/g, " ").trim();
    }

    function show(index, announceIt) {
      var meta = gd.layout.meta && gd.layout.meta.companion_explorer;
      var step = gd.layout.sliders[0].steps[index];
      if (meta) { readout.innerHTML = meta.readouts[index]; }
      if (range) {
        range.value = String(index);
        range.setAttribute("aria-valuetext", step.label);
      }
      if (value) { value.textContent = step.label; }
      if (announceIt && announce) { announce.textContent = step.label + ". " + spoken(); }
    }

    function attach() {
      if (!gd || typeof gd.on !== "function" || !gd.layout) { return setTimeout(attach, 50); }
      gd.on("plotly_sliderchange", function (event) { show(event.slider.active, false); });
      if (range) {
        range.addEventListener("input", function () {
          var index = Number(range.value);
          var args = gd.layout.sliders[0].steps[index].args;
          var layoutUpdate = Object.assign({}, args[1] || {}, { "sliders[0].active": index });
          Plotly.update(gd, args[0] || {}, layoutUpdate, args[2]).then(function () {
            show(index, true);
          });
        });
      }
    }
    attach();
  });
});
