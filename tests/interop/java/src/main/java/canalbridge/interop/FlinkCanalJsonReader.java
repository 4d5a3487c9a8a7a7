package canalbridge.interop;

import java.io.IOException;
import java.time.Duration;
import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.formats.json.canal.CanalJsonDeserializationSchema;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.utils.LogicalTypeParser;
import org.apache.flink.table.types.utils.TypeConversions;
import org.apache.flink.util.Collector;
import org.apache.flink.util.SimpleUserCodeClassLoader;
import org.apache.flink.util.UserCodeClassLoader;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Flink's {@code canal-json} format, the class its Table API source uses
 * ({@link CanalJsonDeserializationSchema}), fed every committed record of a topic in order, with
 * no cluster: the changelog it emits is printed as {"kind": "+I|-U|+U|-D", "row": {...}}.
 * ROW_TYPE is the table's schema in Flink's SQL type syntax, e.g. {@code ROW<id INT, note STRING>};
 * IGNORE_PARSE_ERRORS is the format's {@code canal-json.ignore-parse-errors} (Flink's default:
 * false, so a record the format cannot read fails the job, here exit status 1).
 */
final class FlinkCanalJsonReader {

    private static final Duration READ_TIMEOUT = Duration.ofSeconds(60);
    private static final DateTimeFormatter TIMESTAMP =
            DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss.SSSSSS");

    private final String bootstrap;
    private final String topic;
    private final RowType rowType;
    private final boolean ignoreParseErrors;

    private FlinkCanalJsonReader(String bootstrap, String topic, RowType rowType, boolean ignoreParseErrors) {
        this.bootstrap = bootstrap;
        this.topic = topic;
        this.rowType = rowType;
        this.ignoreParseErrors = ignoreParseErrors;
    }

    static FlinkCanalJsonReader fromArgs(String[] args) {
        if (args.length != 4) {
            Main.usage();
        }
        LogicalType type = LogicalTypeParser.parse(args[2], FlinkCanalJsonReader.class.getClassLoader());
        if (!(type instanceof RowType)) {
            throw new IllegalArgumentException("ROW_TYPE must be ROW<...>, got " + args[2]);
        }
        return new FlinkCanalJsonReader(args[0], args[1], (RowType) type, Boolean.parseBoolean(args[3]));
    }

    int run(JsonLines out) throws Exception {
        CanalJsonDeserializationSchema schema =
                CanalJsonDeserializationSchema.builder(
                                TypeConversions.fromLogicalToDataType(rowType),
                                Collections.emptyList(),
                                TypeInformation.of(RowData.class))
                        .setIgnoreParseErrors(ignoreParseErrors)
                        .build();
        schema.open(new StandaloneContext());
        List<RowData.FieldGetter> getters = new ArrayList<>();
        for (int i = 0; i < rowType.getFieldCount(); i++) {
            getters.add(RowData.createFieldGetter(rowType.getTypeAt(i), i));
        }
        Collector<RowData> printer = new Collector<>() {
            @Override
            public void collect(RowData row) {
                Map<String, Object> values = new LinkedHashMap<>();
                for (int i = 0; i < getters.size(); i++) {
                    values.put(
                            rowType.getFieldNames().get(i),
                            text(rowType.getTypeAt(i), getters.get(i).getFieldOrNull(row)));
                }
                Map<String, Object> line = new LinkedHashMap<>();
                line.put("kind", row.getRowKind().shortString());
                line.put("row", values);
                out.write(line);
            }

            @Override
            public void close() {}
        };
        for (byte[] value : committedValues()) {
            schema.deserialize(value, printer);
        }
        return 0;
    }

    /** Every committed record's value, partition by partition, up to the end as it is now. */
    private List<byte[]> committedValues() throws IOException {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("isolation.level", "read_committed");
        props.put("enable.auto.commit", "false");
        List<byte[]> values = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic, READ_TIMEOUT)) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            partitions.sort((a, b) -> Integer.compare(a.partition(), b.partition()));
            for (TopicPartition partition : partitions) {
                consumer.assign(List.of(partition));
                consumer.seekToBeginning(List.of(partition));
                long end = consumer.endOffsets(List.of(partition), READ_TIMEOUT).get(partition);
                long deadline = System.currentTimeMillis() + READ_TIMEOUT.toMillis();
                while (consumer.position(partition) < end) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IOException(partition + " not read to offset " + end + " in " + READ_TIMEOUT);
                    }
                    for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                        values.add(record.value());
                    }
                }
            }
        }
        return values;
    }

    /** A field as text the test can compare: dates ISO, timestamps to the microsecond, bytes base64. */
    private static String text(LogicalType type, Object value) {
        if (value == null) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case DATE:
                return LocalDate.ofEpochDay((Integer) value).toString();
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                return ((TimestampData) value).toLocalDateTime().format(TIMESTAMP);
            case BINARY:
            case VARBINARY:
                return Base64.getEncoder().encodeToString((byte[]) value);
            default:
                return value.toString();
        }
    }

    /** What {@link DeserializationSchema#open} is handed outside a Flink task. */
    private static final class StandaloneContext implements DeserializationSchema.InitializationContext {
        @Override
        public MetricGroup getMetricGroup() {
            return new UnregisteredMetricsGroup();
        }

        @Override
        public UserCodeClassLoader getUserCodeClassLoader() {
            return SimpleUserCodeClassLoader.create(FlinkCanalJsonReader.class.getClassLoader());
        }
    }
}
