package canalbridge.interop;

import com.alibaba.otter.canal.client.kafka.KafkaCanalConnector;
import com.alibaba.otter.canal.protocol.CanalEntry;
import com.alibaba.otter.canal.protocol.FlatMessage;
import com.alibaba.otter.canal.protocol.Message;
import com.google.protobuf.InvalidProtocolBufferException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * canal's own MQ client as canal-adapter and users run it: {@link KafkaCanalConnector} in flat
 * mode (getFlatList, which acks) or protobuf mode (getList, which acks), subscribed with a
 * consumer group. Reads until ROWS row changes came, then one more empty poll, so a duplicate
 * or an extra change is printed too instead of being cut off.
 */
final class CanalClientReader {

    private static final long POLL_MS = 500;

    private final String bootstrap;
    private final String topic;
    private final String group;
    private final int rows;
    private final long timeoutMs;
    private final boolean flat;

    private CanalClientReader(
            String bootstrap, String topic, String group, int rows, long timeoutMs, boolean flat) {
        this.bootstrap = bootstrap;
        this.topic = topic;
        this.group = group;
        this.rows = rows;
        this.timeoutMs = timeoutMs;
        this.flat = flat;
    }

    static CanalClientReader fromArgs(String[] args, boolean flat) {
        if (args.length != 5) {
            Main.usage();
        }
        return new CanalClientReader(
                args[0], args[1], args[2], Integer.parseInt(args[3]), Long.parseLong(args[4]) * 1000, flat);
    }

    int run(JsonLines out) throws InvalidProtocolBufferException {
        KafkaCanalConnector connector = connector();
        connector.connect();
        connector.subscribe();
        try {
            long deadline = System.currentTimeMillis() + timeoutMs;
            int seen = 0;
            boolean drained = false;
            while (!drained && System.currentTimeMillis() < deadline) {
                int batch = flat ? readFlat(connector, out) : readProtobuf(connector, out);
                seen += batch;
                drained = seen >= rows && batch == 0;
            }
            return seen >= rows ? 0 : 2;
        } finally {
            connector.unsubscribe();
            connector.disconnect();
        }
    }

    /**
     * The connector with the one property a test changes: it starts a new group at the topic's
     * beginning (canal's default, latest, would miss what the bridge wrote before).
     */
    private KafkaCanalConnector connector() {
        return new KafkaCanalConnector(bootstrap, topic, null, group, 100, flat) {
            {
                properties.put("auto.offset.reset", "earliest");
            }
        };
    }

    private int readFlat(KafkaCanalConnector connector, JsonLines out) {
        int count = 0;
        for (FlatMessage message : connector.getFlatList(POLL_MS, TimeUnit.MILLISECONDS)) {
            Map<String, Object> common = new LinkedHashMap<>();
            common.put("type", message.getType());
            common.put("database", message.getDatabase());
            common.put("table", message.getTable());
            common.put("isDdl", message.getIsDdl());
            common.put("pkNames", message.getPkNames());
            common.put("sqlType", message.getSqlType());
            common.put("mysqlType", message.getMysqlType());
            if (Boolean.TRUE.equals(message.getIsDdl()) || message.getData() == null) {
                common.put("sql", message.getSql());
                out.write(common);
                continue;
            }
            List<Map<String, String>> olds = message.getOld();
            for (int i = 0; i < message.getData().size(); i++) {
                Map<String, Object> line = new LinkedHashMap<>(common);
                line.put("data", message.getData().get(i));
                line.put("old", olds == null ? null : olds.get(i));
                out.write(line);
                count++;
            }
        }
        return count;
    }

    private int readProtobuf(KafkaCanalConnector connector, JsonLines out)
            throws InvalidProtocolBufferException {
        int count = 0;
        for (Message message : connector.getList(POLL_MS, TimeUnit.MILLISECONDS)) {
            for (CanalEntry.Entry entry : message.getEntries()) {
                if (entry.getEntryType() != CanalEntry.EntryType.ROWDATA) {
                    continue; // transaction begin / end
                }
                CanalEntry.Header header = entry.getHeader();
                CanalEntry.RowChange change = CanalEntry.RowChange.parseFrom(entry.getStoreValue());
                Map<String, Object> common = new LinkedHashMap<>();
                common.put("type", header.getEventType().name());
                common.put("database", header.getSchemaName());
                common.put("table", header.getTableName());
                common.put("isDdl", change.getIsDdl());
                if (change.getIsDdl()) {
                    common.put("sql", change.getSql());
                    out.write(common);
                    continue;
                }
                for (CanalEntry.RowData row : change.getRowDatasList()) {
                    Map<String, Object> line = new LinkedHashMap<>(common);
                    line.put("before", values(row.getBeforeColumnsList()));
                    line.put("after", values(row.getAfterColumnsList()));
                    line.put("updated", updated(row.getAfterColumnsList()));
                    line.put("pkNames", keys(row));
                    line.put("sqlType", sqlTypes(row));
                    line.put("mysqlType", mysqlTypes(row));
                    out.write(line);
                    count++;
                }
            }
        }
        return count;
    }

    private static Map<String, String> values(List<CanalEntry.Column> columns) {
        Map<String, String> values = new LinkedHashMap<>();
        for (CanalEntry.Column column : columns) {
            values.put(column.getName(), column.getIsNull() ? null : column.getValue());
        }
        return values;
    }

    private static List<String> updated(List<CanalEntry.Column> columns) {
        List<String> names = new ArrayList<>();
        for (CanalEntry.Column column : columns) {
            if (column.getUpdated()) {
                names.add(column.getName());
            }
        }
        return names;
    }

    private static List<CanalEntry.Column> image(CanalEntry.RowData row) {
        return row.getAfterColumnsCount() > 0 ? row.getAfterColumnsList() : row.getBeforeColumnsList();
    }

    private static List<String> keys(CanalEntry.RowData row) {
        List<String> names = new ArrayList<>();
        for (CanalEntry.Column column : image(row)) {
            if (column.getIsKey()) {
                names.add(column.getName());
            }
        }
        return names;
    }

    private static Map<String, Integer> sqlTypes(CanalEntry.RowData row) {
        Map<String, Integer> types = new LinkedHashMap<>();
        for (CanalEntry.Column column : image(row)) {
            types.put(column.getName(), column.getSqlType());
        }
        return types;
    }

    private static Map<String, String> mysqlTypes(CanalEntry.RowData row) {
        Map<String, String> types = new LinkedHashMap<>();
        for (CanalEntry.Column column : image(row)) {
            types.put(column.getName(), column.getMysqlType());
        }
        return types;
    }
}
