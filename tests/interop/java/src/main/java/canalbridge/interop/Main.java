package canalbridge.interop;

import java.util.Arrays;

/**
 * Reads a canal-bridge topic with a real consumer and prints what that consumer hands its user,
 * one JSON object per line (tests/interop compares them with the source rows).
 *
 * <pre>
 * canal-flat     BOOTSTRAP TOPIC GROUP ROWS TIMEOUT_S   canal's KafkaCanalConnector, getFlatList + ack
 * canal-protobuf BOOTSTRAP TOPIC GROUP ROWS TIMEOUT_S   canal's KafkaCanalConnector, getList
 * flink          BOOTSTRAP TOPIC ROW_TYPE IGNORE_PARSE_ERRORS   Flink's canal-json format, to the topic's end
 * </pre>
 *
 * Exit status: 0 when read, 2 when fewer than ROWS row changes came within TIMEOUT_S (what came
 * is printed all the same), 1 when the consumer failed (its error on stderr, one line).
 */
public final class Main {

    private Main() {}

    public static void main(String[] args) {
        if (args.length == 0) {
            usage();
        }
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        try {
            int status = switch (args[0]) {
                case "canal-flat" -> CanalClientReader.fromArgs(rest, true).run(JsonLines.stdout());
                case "canal-protobuf" -> CanalClientReader.fromArgs(rest, false).run(JsonLines.stdout());
                case "flink" -> FlinkCanalJsonReader.fromArgs(rest).run(JsonLines.stdout());
                default -> usage();
            };
            System.out.flush();
            System.exit(status);
        } catch (Exception e) {
            System.out.flush();
            Throwable root = e;
            StringBuilder causes = new StringBuilder(String.valueOf(e));
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
                causes.append(" <- caused by ").append(root);
            }
            System.err.println(causes.toString().replace('\n', ' '));
            System.exit(1);
        }
    }

    static int usage() {
        System.err.println(
                "usage: canal-flat|canal-protobuf BOOTSTRAP TOPIC GROUP ROWS TIMEOUT_S"
                        + " | flink BOOTSTRAP TOPIC ROW_TYPE IGNORE_PARSE_ERRORS");
        System.exit(64);
        return 64;
    }
}
