# Translated line for line to PyFlink from zhisheng17/flink-learning
# flink-learning-examples/src/main/java/com/zhisheng/examples/streaming/sideoutput/Main.java
# @ d731cee7618021be56d132cc925102ffff8d75e6
# (https://github.com/zhisheng17/flink-learning/blob/d731cee7618021be56d132cc925102ffff8d75e6/flink-learning-examples/src/main/java/com/zhisheng/examples/streaming/sideoutput/Main.java)
#
# Constants, input (WORDS) and structure kept: every line keyed by the constant 0, a Tokenizer
# that sends words longer than 5 to one side output and words of length 5 to another (both side
# outputs are never read: the prints are commented out in the original), then a word count
# (keyBy(0).sum(1)) of the shorter words. Deviations, forced by PyFlink:
#  - PyFlink's KeyedStream.process takes only a KeyedProcessFunction, so Tokenizer (a Java
#    ProcessFunction applied to a KeyedStream) is a KeyedProcessFunction; it uses no key, state or
#    timer, as in the original.
#  - keyBy(0) (a tuple field position) becomes key_by(lambda value: value[0]).
#  - env.setStreamTimeCharacteristic(TimeCharacteristic.IngestionTime) and
#    ParameterTool / setGlobalJobParameters have no PyFlink 2.x equivalent; kept as comments.
#  - Java's value.toLowerCase().split("\\W+") is re.split(r"\W+", value.lower()) (Java drops
#    trailing empty strings, so trailing "" tokens are dropped here too).
import re

from pyflink.common import Types
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction

over_five_tag = OutputTag("overFive", Types.STRING())
equal_five_tag = OutputTag("equalFive", Types.STRING())


def main(args):
    # final ParameterTool params = ParameterTool.fromArgs(args);
    env = StreamExecutionEnvironment.get_execution_environment()
    # env.setStreamTimeCharacteristic(TimeCharacteristic.IngestionTime);
    # env.getConfig().setGlobalJobParameters(params);

    tokenizer = env.from_collection(WORDS) \
        .key_by(lambda value: 0) \
        .process(Tokenizer())

    # tokenizer.get_side_output(over_five_tag).print()   # 将字符串长度大于 5 的打印出来

    # tokenizer.get_side_output(equal_five_tag).print()  # 将字符串长度等于 5 的打印出来

    # tokenizer.print()  # 这个打印出来的是字符串长度小于 5 的

    tokenizer.key_by(lambda value: value[0]) \
        .sum(1) \
        .print()  # 做 word count 后打印出来

    env.execute("Streaming WordCount SideOutput")


class Tokenizer(KeyedProcessFunction):

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        tokens = re.split(r"\W+", value.lower())
        while tokens and tokens[-1] == "":
            tokens.pop()

        for token in tokens:
            if len(token) > 5:
                yield over_five_tag, token  # 将字符串长度大于 5 的 word 放到 overFiveTag 中去
            elif len(token) == 5:
                yield equal_five_tag, token  # 将字符串长度等于 5 的 word 放到 equalFiveTag 中去
            elif len(token) < 5:
                yield token, 1


WORDS = [
    "To be, or not to be,--that is the question:--",
    "Whether 'tis nobler in the mind to suffer",
    "The slings and arrows of outrageous fortune",
    "Or to take arms against a sea of troubles,",
    "And by opposing end them?--To die,--to sleep,--",
    "No more; and by a sleep to say we end",
    "The heartache, and the thousand natural shocks",
    "That flesh is heir to,--'tis a consummation",
    "Devoutly to be wish'd. To die,--to sleep;--",
    "To sleep! perchance to dream:--ay, there's the rub;",
    "For in that sleep of death what dreams may come,",
    "When we have shuffled off this mortal coil,",
    "Must give us pause: there's the respect",
    "That makes calamity of so long life;",
    "For who would bear the whips and scorns of time,",
    "The oppressor's wrong, the proud man's contumely,",
    "The pangs of despis'd love, the law's delay,",
    "The insolence of office, and the spurns",
    "That patient merit of the unworthy takes,",
    "When he himself might his quietus make",
    "With a bare bodkin? who would these fardels bear,",
    "To grunt and sweat under a weary life,",
    "But that the dread of something after death,--",
    "The undiscover'd country, from whose bourn",
    "No traveller returns,--puzzles the will,",
    "And makes us rather bear those ills we have",
    "Than fly to others that we know not of?",
    "Thus conscience does make cowards of us all;",
    "And thus the native hue of resolution",
    "Is sicklied o'er with the pale cast of thought;",
    "And enterprises of great pith and moment,",
    "With this regard, their currents turn awry,",
    "And lose the name of action.--Soft you now!",
    "The fair Ophelia!--Nymph, in thy orisons",
    "Be all my sins remember'd."
]


if __name__ == '__main__':
    import sys
    main(sys.argv[1:])
