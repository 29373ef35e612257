/** Registers the graph's embeddable kinds ("thought", "node") for every process that imports lib/embed/kinds. */
import "./thoughts";
import "./nodes";
