# Written in PyFlink from Flink's documentation, "The Broadcast State Pattern" (apache/flink
#   docs/content/docs/dev/datastream/fault-tolerance/broadcast_state.md, the example added by
#   FLINK-8780, Apache-2.0; https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/datastream/fault-tolerance/broadcast_state/)
#
# Kept: items keyed by colour connected with a stream of rules broadcast with the MapStateDescriptor
# "RulesBroadcastState"; a KeyedBroadcastProcessFunction whose process_broadcast_element stores each
# rule under its name, and whose process_element keeps an item of a rule's first shape in keyed
# MapState under the rule's name ("items") and, for an item of the rule's second shape, emits a
# "MATCH: ..." string with every kept item and empties the list; the comment about the missing else.
# Deviations: Item and Rule become tuples (colour, shape) and (name, first shape, second shape);
# immutableEntries() is items(); the documentation gives no sources or sink: two collections WRITTEN
# FOR THIS CORPUS (two rules, ten items of three colours) and print().
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedBroadcastProcessFunction
from pyflink.datastream.state import MapStateDescriptor

rule_state_descriptor = MapStateDescriptor("RulesBroadcastState", Types.STRING(), Types.PICKLED_BYTE_ARRAY())


class ShapeMatcher(KeyedBroadcastProcessFunction):
    def open(self, runtime_context):
        self.items = runtime_context.get_map_state(
            MapStateDescriptor("items", Types.STRING(), Types.PICKLED_BYTE_ARRAY()))

    def process_broadcast_element(self, rule, ctx):
        ctx.get_broadcast_state(rule_state_descriptor).put(rule[0], rule)

    def process_element(self, item, ctx):
        shape = item[1]
        for rule_name, rule in ctx.get_broadcast_state(rule_state_descriptor).items():
            stored = self.items.get(rule_name) or []
            if shape == rule[2] and stored:
                for i in stored:
                    yield "MATCH: " + str(i) + " - " + str(item)
                stored = []
            # there is no else{} to cover if rule.first == rule.second
            if shape == rule[1]:
                stored.append(item)
            if not stored:
                self.items.remove(rule_name)
            else:
                self.items.put(rule_name, stored)


env = StreamExecutionEnvironment.get_execution_environment()
rules = env.from_collection([("circle-triangle", "circle", "triangle"), ("square-triangle", "square", "triangle")])
items = env.from_collection([("red", "circle"), ("blue", "square"), ("red", "triangle"), ("red", "square"),
                             ("blue", "triangle"), ("green", "circle"), ("green", "triangle"), ("blue", "square"),
                             ("red", "circle"), ("red", "triangle")])
color_partitioned = items.key_by(lambda item: item[0])
rule_broadcast = rules.broadcast(rule_state_descriptor)
color_partitioned.connect(rule_broadcast).process(ShapeMatcher()).print()
env.execute("shapes")
